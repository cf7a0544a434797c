// recipes_reference: prints the field reference of docs/recipes.md, or rewrites it in place.
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "recipes/schema_reference.h"

int main(int argc, char** argv) {
  using namespace rota::recipes;
  const std::string usage =
      "usage: recipes_reference            print the generated field reference\n"
      "       recipes_reference --update DOC  replace the generated part of DOC (between\n"
      "                                      the BEGIN/END GENERATED FIELD REFERENCE markers)\n";
  try {
    const std::string reference = schema_reference_markdown(CommentedSchema());
    if (argc == 1) {
      std::cout << reference;
      return 0;
    }
    if (argc != 3 || std::string(argv[1]) != "--update") {
      std::cerr << usage;
      return 2;
    }
    std::ifstream in(argv[2]);
    std::stringstream text;
    text << in.rdbuf();
    std::string doc = text.str();
    const size_t begin = doc.find(kReferenceBegin);
    const size_t end = doc.find(kReferenceEnd);
    if (!in || begin == std::string::npos || end == std::string::npos || end < begin) {
      std::cerr << argv[2] << ": no generated-reference markers found\n";
      return 1;
    }
    const size_t body = begin + std::string(kReferenceBegin).size();
    doc.replace(body, end - body, "\n" + reference);
    std::ofstream(argv[2]) << doc;
    return 0;
  } catch (const std::exception& error) {
    std::cerr << "recipes_reference: " << error.what() << "\n";
    return 1;
  }
}
