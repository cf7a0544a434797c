#!/usr/bin/env python3
"""Checks that test files keep their helpers in `namespace ROTA_TEST_FILE_NS` (unity batches).

The test executables compile in unity batches (tests/CMakeLists.txt): several test files share
one translation unit. A bare anonymous namespace would then be shared by the whole batch, and a
helper of one file could silently become a better overload for a call in another. So every
namespace-scope declaration of a batched test file must sit inside `namespace ROTA_TEST_FILE_NS`
(unique per file in a batch, anonymous otherwise); only the gtest macros, which name their test
by suite and name, may stand outside it.
"""
import glob
import os
import re
import unittest

SOURCE = os.environ.get("ROTA_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
FILE_NAMESPACE = "ROTA_TEST_FILE_NS"
# Test sources that are not compiled in unity batches: shared helpers, the architecture checks,
# and the multi-process programs (tests/CMakeLists.txt builds them apart).
NOT_BATCHED = re.compile(r"^tests/(support|architecture|framework/distributed/(mpi|launch|probe))/")
ALLOWED_OUTSIDE = re.compile(
    r"^(TEST|TEST_F|TEST_P|TYPED_TEST|TYPED_TEST_P|INSTANTIATE_TEST_SUITE_P)\s*\(")


def starts_with_digit(text, i):
    """Whether the token that text[i] continues (letters, digits and ') begins with a digit."""
    start = i
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_'"):
        start -= 1
    return start < i and text[start].isdigit()


def strip_literals_and_comments(text):
    """The text with comments, string and character literals blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("\n" * text.count("\n", i, end))
            i = end
        elif c == "R" and text.startswith('"', i + 1) and (i == 0 or not text[i - 1].isalnum()):
            open_paren = text.find("(", i + 2)
            delimiter = text[i + 2:open_paren]
            end = text.find(")" + delimiter + '"', open_paren)
            end = n if end < 0 else end + len(delimiter) + 2
            out.append('""' + "\n" * text.count("\n", i, end))
            i = end
        elif c == "'" and starts_with_digit(text, i):
            out.append(c)  # a digit separator (100'000), not a character literal
            i += 1
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def violations(text):
    """(line number, line) of each namespace-scope declaration outside the file's namespace."""
    found = []
    # Each open brace: "file" (ROTA_TEST_FILE_NS), "anonymous", "namespace" (any other named
    # one) or "block".
    stack = []
    statement_start = True
    for number, line in enumerate(strip_literals_and_comments(text).split("\n"), start=1):
        stripped = line.strip()
        at_namespace_scope = all(kind != "block" for kind in stack)
        if (at_namespace_scope and statement_start and stripped and "file" not in stack and
                not stripped.startswith(("#", "}")) and
                not re.match(r"^namespace\s*[\w:]*\s*\{", stripped) and
                not ALLOWED_OUTSIDE.match(stripped)):
            found.append((number, stripped))
        for match in re.finditer(r"namespace\s*([\w:]*)\s*\{|[{};]", line):
            token = match.group(0)
            if token.startswith("namespace"):
                name = match.group(1)
                stack.append("file" if name == FILE_NAMESPACE else
                             ("anonymous" if not name else "namespace"))
                if not name:
                    found.append((number, stripped))
            elif token == "{":
                stack.append("block")
            elif token == "}":
                if stack:
                    stack.pop()
        # A declaration continues over lines until ';' or a brace at namespace scope.
        if stripped and not stripped.startswith("#"):
            statement_start = stripped.endswith((";", "{", "}"))
    return found


def batched_test_files():
    files = []
    for path in sorted(glob.glob(os.path.join(SOURCE, "tests", "**", "*.cpp"), recursive=True)):
        relative = os.path.relpath(path, SOURCE)
        if not NOT_BATCHED.match(relative):
            files.append((relative, path))
    return files


class TestFileNamespaces(unittest.TestCase):
    def test_every_batched_test_file_keeps_its_helpers_in_its_namespace(self):
        files = batched_test_files()
        self.assertGreater(len(files), 150)
        problems = []
        for relative, path in files:
            with open(path, encoding="utf-8") as source:
                for number, line in violations(source.read()):
                    problems.append(f"{relative}:{number}: outside {FILE_NAMESPACE}: {line}")
        self.assertEqual(problems, [], "\n".join(problems))

    def test_a_bare_anonymous_namespace_is_found(self):
        text = "namespace rota {\nnamespace {\nint helper() { return 1; }\n}  // namespace\n}\n"
        self.assertEqual([number for number, _ in violations(text)], [2, 3])

    def test_a_helper_beside_the_file_namespace_is_found(self):
        text = ("namespace rota {\nnamespace ROTA_TEST_FILE_NS {\nint a() { return 1; }\n}\n"
                "std::string\nhelper(int x) {\n  return {};\n}\n"
                "using namespace std;\nconst int kLimit = 3;\nconst long kBig = 1'000;\n"
                "int g() {\n  return 0;\n}\n}  // namespace rota\n")
        self.assertEqual([number for number, _ in violations(text)], [5, 9, 10, 11, 12])

    def test_tests_and_code_inside_the_file_namespace_pass(self):
        text = ('namespace rota {\nnamespace ROTA_TEST_FILE_NS {\nnamespace fs = std::filesystem;\n'
                'const char* kBraces = "}}{";\nconst char* kRaw = R"x(\n}\n)x";\n'
                "struct Case {\n  int n;\n};\n// } a comment\nint f() {\n  if (1) {\n  }\n"
                "  return 0;\n}\nTEST(Suite, Name) {\n  EXPECT_EQ(f(), 0);\n}\n}  // namespace\n"
                "TEST(Outside, Name) {\n  const char c = '}';\n  const long n = 100'000;\n}\n"
                "}  // namespace rota\n")
        self.assertEqual(violations(text), [])


if __name__ == "__main__":
    unittest.main()
