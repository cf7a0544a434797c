# Runs every shell and Python block of docs/python-native.md and checks the outputs it shows.
"""The blocks run in order in one scratch directory holding links to the repository's python/
and recipes/ and to the build directory (the folder of ROTA_BINARY), so the shell block builds,
trains runs/tiny, installs the package into a fresh venv with pip and imports it from another
directory. A `print(...)  # text` line must print `text` (… stands for anything)."""
import contextlib
import io
import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from native_support import BINARY, REPO, TempDir  # noqa: E402

DOC = os.path.join(REPO, "docs", "python-native.md")


def blocks(language):
    with open(DOC, encoding="utf-8") as f:
        text = f.read()
    return re.findall(r"```%s\n(.*?)```" % language, text, re.S)


def expected_prints(code):
    """The comments of the print lines, as regular expressions (… matches anything)."""
    out = []
    for line in code.splitlines():
        match = re.match(r"\s*print\(.*\)\s+# (.*)$", line)
        if match:
            out.append(".*".join(map(re.escape, match.group(1).split("…"))))
    return out


class DocBlocks(unittest.TestCase):
    def test_blocks(self):
        tmp = TempDir()
        try:
            for name, target in (("python", os.path.join(REPO, "python")),
                                 ("recipes", os.path.join(REPO, "recipes")),
                                 ("build", os.path.dirname(BINARY))):
                os.symlink(target, tmp.join(name))
            env = dict(os.environ, ROTA_BUILD_DIR=os.path.dirname(BINARY))
            shell = blocks("sh")
            self.assertEqual(len(shell), 1)
            done = subprocess.run(["bash", "-e", "-c", shell[0]], cwd=tmp.path, env=env,
                                  capture_output=True, text=True)
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
            self.assertIn("Successfully installed rota", done.stdout)
            lines = done.stdout.splitlines()
            self.assertEqual(lines[-1], "20")  # rota.load from /tmp through the venv
            self.assertIn("causal_lm", lines)  # from the source tree
            self.assertTrue(os.path.isfile(tmp.join(".venv", "bin", "python")))

            python = blocks("python")
            self.assertGreaterEqual(len(python), 5)
            os.chdir(tmp.path)
            for code in python:
                printed = io.StringIO()
                with contextlib.redirect_stdout(printed):
                    exec(compile(code, DOC, "exec"), {"__name__": "__doc_block__"})
                lines = [line for line in printed.getvalue().splitlines()]
                wanted = expected_prints(code)
                # the commented prints are checked in order against the printed lines
                position = 0
                for pattern in wanted:
                    while position < len(lines) and not re.fullmatch(pattern, lines[position]):
                        position += 1
                    self.assertLess(position, len(lines), "no printed line matches %r in:\n%s"
                                    % (pattern, printed.getvalue()))
                    position += 1
        finally:
            os.chdir(REPO)
            tmp.cleanup()


if __name__ == "__main__":
    unittest.main()
