// CSV and TSV records with RFC 4180 quoting, read from a stream of bytes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace rota::data {

/// Cuts a CSV (delimiter ',') or TSV ('\t') byte stream, fed in chunks of any size, into
/// records of fields (RFC 4180):
///  - records end at LF or CRLF outside quotes; a blank line is skipped;
///  - a field starting with '"' is quoted: it may hold delimiters, line breaks and doubled
///    quotes ("" = one '"'); after its closing quote only a delimiter or the record's end may
///    follow (else an error naming file:line);
///  - a '"' inside an unquoted field is kept as it is;
///  - a quote still open at the end of the data is an error naming the line where that field
///    started; a record longer than kMaxRecordBytes is an error.
/// `emit` gets each record's fields and the 1-based line where the record starts.
class DelimitedReader {
 public:
  using Emit = std::function<void(std::vector<std::string>& fields, int64_t line)>;
  DelimitedReader(std::string file, char delimiter, Emit emit)
      : file_(std::move(file)), delimiter_(delimiter), emit_(std::move(emit)) {}
  void feed(std::string_view bytes);
  void finish();

 private:
  enum class State { kFieldStart, kUnquoted, kQuoted, kQuoteInQuoted, kCarriageReturn };
  void end_field();
  void end_record();
  void take(char c);

  std::string file_;
  char delimiter_;
  Emit emit_;
  State state_ = State::kFieldStart;
  std::vector<std::string> fields_;
  std::string field_;
  bool quoted_ = false;       // the current field was quoted
  bool record_open_ = false;  // a byte of the current record has been seen
  int64_t line_ = 1;          // physical line of the next byte
  int64_t record_line_ = 1;
  int64_t field_line_ = 1;
  size_t record_bytes_ = 0;
};

}  // namespace rota::data
