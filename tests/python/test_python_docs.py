# Runs the code of docs/python.md: the walkthrough's Python blocks in order, then its commands.
import contextlib
import io
import os
import re
import subprocess
import sys
import tempfile
import unittest

REPO = os.environ.get("ROTA_REPO", os.path.join(os.path.dirname(__file__), "..", ".."))
BINARY = os.path.abspath(os.environ.get("ROTA_BINARY", os.path.join(REPO, "build", "rota")))
DOC = os.path.join(REPO, "docs", "python.md")


def blocks(text, language, section=None):
    if section is not None:
        start = text.index(f"\n## {section}\n")
        end = text.find("\n## ", start + 1)
        text = text[start:end if end >= 0 else None]
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


class PythonDocs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(DOC, encoding="utf-8") as f:
            cls.text = f.read()
        cls.tmp = tempfile.TemporaryDirectory()
        os.symlink(os.path.abspath(os.path.join(REPO, "recipes")),
                   os.path.join(cls.tmp.name, "recipes"))
        shared = os.environ.get("ROTA_SHARED", os.path.join(REPO, "..", "shared"))
        os.environ.setdefault("ROTA_DATA", os.path.abspath(os.path.join(shared, "data")))
        cls.cwd = os.getcwd()
        os.chdir(cls.tmp.name)

    @classmethod
    def tearDownClass(cls):
        os.chdir(cls.cwd)
        cls.tmp.cleanup()

    def test_walkthrough_then_export(self):
        code = blocks(self.text, "python", "Walkthrough")
        self.assertGreaterEqual(len(code), 5)
        namespace = {}
        for block in code:
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                exec(compile(block, DOC, "exec"), namespace)  # noqa: S102 - the docs' own code
            self.assertTrue(printed.getvalue().strip(), f"the block printed nothing:\n{block}")
        # What the walkthrough claims, checked on its results.
        self.assertEqual(len(namespace["losses"]), 20)
        self.assertEqual(namespace["logits"].shape[:2], (1, len(namespace["ids"])))
        self.assertLess(abs(namespace["ours"] - namespace["logits"]).max(), 1e-4)
        self.assertTrue(os.path.exists("runs/walkthrough_torch/state.binpb"))
        # The export command of the "rota export hf" section, then loading its result.
        for block in blocks(self.text, "sh", "rota export hf"):
            for line in block.strip().splitlines():
                args = line.split()
                self.assertEqual(args[0], "build/rota")
                result = subprocess.run([BINARY] + args[1:], capture_output=True, text=True)
                self.assertEqual(result.returncode, 0, result.stderr)
        import rota.torch as rt
        exported = rt.from_pretrained("runs/walkthrough_hf")
        self.assertEqual(exported.config, rt.from_pretrained("runs/walkthrough").config)

    def test_install_commands(self):
        """The Install section's commands as written, in a fresh virtual environment, with
        another python3 (and pip) first on PATH, as a pyenv one shadows Debian's, and no package
        index: they must use Debian's interpreter and download nothing."""
        commands = blocks(self.text, "sh", "Install")[0].strip().splitlines()
        venv = os.path.join(self.tmp.name, ".venv")
        # A temporary directory of the install's own, to see what it leaves behind there.
        scratch = os.path.join(self.tmp.name, "install-tmp")
        os.mkdir(scratch)
        shadow = os.path.join(self.tmp.name, "shadowing-bin")
        os.mkdir(shadow)
        for name in ("python3", "python", "pip", "pip3"):
            with open(os.path.join(shadow, name), "w") as f:
                f.write("#!/bin/sh\necho shadowing python3: not Debian Python >&2\nexit 3\n")
            os.chmod(os.path.join(shadow, name), 0o755)
        env = dict(os.environ, TMPDIR=scratch, PATH=shadow + os.pathsep + os.environ["PATH"],
                   PIP_NO_INDEX="1")
        for line in commands:
            line = line.replace("./python", os.path.join(os.path.abspath(REPO), "python"))
            result = subprocess.run(line, shell=True, capture_output=True, text=True,
                                    cwd=self.tmp.name, env=env)
            self.assertEqual(result.returncode, 0, f"{line}\n{result.stdout}\n{result.stderr}")
        self.assertTrue(os.path.exists(os.path.join(venv, "bin", "python")))
        self.assertEqual(os.listdir(scratch), [], "the install left files in the temp dir")


if __name__ == "__main__":
    unittest.main()
