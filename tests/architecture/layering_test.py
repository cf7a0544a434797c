#!/usr/bin/env python3
"""Tests tools/check_layering.py: the real tree passes, planted wrong-way includes fail it."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SOURCE = os.environ["ROTA_SOURCE_DIR"]
LAYERS = os.environ["ROTA_LAYER_TABLE"]
CHECKER = os.path.join(SOURCE, "tools", "check_layering.py")


def run_checker(root):
    result = subprocess.run([sys.executable, CHECKER, "--layers", LAYERS, "--root", root],
                            capture_output=True, text=True, check=False)
    return result.returncode, result.stdout + result.stderr


def layer_folders():
    folders = []
    with open(LAYERS, encoding="utf-8") as table:
        for line in table:
            if line.strip() and not line.startswith("#"):
                folders += line.split()[1].split(",")
    return folders


class LayeringTest(unittest.TestCase):
    def setUp(self):
        # A copy of every layer's folder, so a planted include never touches the real tree.
        self.root = tempfile.mkdtemp(prefix="rota-layering-")
        for folder in layer_folders():
            shutil.copytree(os.path.join(SOURCE, folder), os.path.join(self.root, folder))

    def tearDown(self):
        shutil.rmtree(self.root)

    def plant(self, relative, header):
        """Appends `#include "header"` to a copied file; returns the line number it lands on."""
        path = os.path.join(self.root, relative)
        with open(path, encoding="utf-8") as source:
            lines = source.read().splitlines()
        with open(path, "a", encoding="utf-8") as source:
            source.write(f'#include "{header}"\n')
        return len(lines) + 1

    def test_the_tree_points_down(self):
        code, output = run_checker(SOURCE)
        self.assertEqual(code, 0, output)
        self.assertIn("layering: 0 wrong-way include(s)", output)

    def test_the_copy_points_down(self):
        code, output = run_checker(self.root)
        self.assertEqual(code, 0, output)

    def test_a_tensor_header_including_nn_fails(self):
        line = self.plant("framework/tensor/tensor.h", "framework/nn/module.h")
        code, output = run_checker(self.root)
        self.assertEqual(code, 1, output)
        self.assertIn(f'framework/tensor/tensor.h:{line}: rota_tensor includes '
                      f'"framework/nn/module.h" of rota_nn', output)
        self.assertIn("layering: 1 wrong-way include(s)", output)

    def test_models_including_the_recipe_schema_fails(self):
        # models take plain option structs; only the application reads recipes.
        line = self.plant("models/encoder.cpp", "recipes/recipe.pb.h")
        code, output = run_checker(self.root)
        self.assertEqual(code, 1, output)
        self.assertIn(f'models/encoder.cpp:{line}: rota_models includes "recipes/recipe.pb.h" '
                      f'of rota_recipes', output)

    def test_a_sideways_include_fails(self):
        # data and models are side by side: neither may use the other.
        self.plant("data/loader/batch_loader.cpp", "models/encoder.h")
        code, output = run_checker(self.root)
        self.assertEqual(code, 1, output)
        self.assertIn('rota_data includes "models/encoder.h" of rota_models', output)

    def test_an_include_of_no_layer_fails(self):
        self.plant("framework/backend/cpu/parallel.cpp", "tests/support/allclose.h")
        code, output = run_checker(self.root)
        self.assertEqual(code, 1, output)
        self.assertIn('rota_backend includes "tests/support/allclose.h" of no layer', output)

    def test_an_include_through_a_lower_layer_passes(self):
        # nn → autograd → backend → tensor → base: a transitive dependency is allowed.
        self.plant("framework/nn/linear.cpp", "framework/base/error.h")
        code, output = run_checker(self.root)
        self.assertEqual(code, 0, output)


if __name__ == "__main__":
    unittest.main(verbosity=2)
