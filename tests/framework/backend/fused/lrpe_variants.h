// The twelve LRPE kernel variants (Type × P × pairing) the LRPE kernel tests run over.
#pragma once

#include <string>
#include <vector>

#include "framework/backend/fused/lrpe.h"

namespace rota::testing {

struct LrpeVariant {
  backend::LrpeCore core;
  backend::LrpePairing pairing;
  backend::LrpeP p;
};

/// "Type2HouseholderAdj": the gtest name of a variant (pairing only for Type 2).
inline std::string variant_name(const LrpeVariant& v) {
  const char* core[] = {"Type1", "Type2", "Type3"};
  const char* p_name[] = {"Identity", "Householder", "OddEven"};
  std::string s = std::string(core[static_cast<int>(v.core)]) + p_name[static_cast<int>(v.p)];
  if (v.core == backend::LrpeCore::kOrthogonal) {
    s += v.pairing == backend::LrpePairing::kAdjacent ? "Adj" : "Half";
  }
  return s;
}

/// Every P with Type 1, Type 2 (adjacent and half pairing) and Type 3.
inline std::vector<LrpeVariant> all_lrpe_variants() {
  using backend::LrpeCore;
  using backend::LrpePairing;
  std::vector<LrpeVariant> out;
  for (backend::LrpeP p :
       {backend::LrpeP::kIdentity, backend::LrpeP::kHouseholder, backend::LrpeP::kOddEven}) {
    out.push_back({LrpeCore::kUnitary, LrpePairing::kAdjacent, p});
    out.push_back({LrpeCore::kOrthogonal, LrpePairing::kAdjacent, p});
    out.push_back({LrpeCore::kOrthogonal, LrpePairing::kHalf, p});
    out.push_back({LrpeCore::kPermutation, LrpePairing::kAdjacent, p});
  }
  return out;
}

}  // namespace rota::testing
