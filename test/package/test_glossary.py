# Copyright 2026 sim_clock maintainers
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""
The frame engine's glossary (doc/design.md, "Vocabulary") against the code's names.

Each name in the table's last column is defined in the package: ``Class.name`` a class with a
method, property or attribute of that name; a bare name a class, function, method or
attribute anywhere; a path a file of the repository. A name renamed in the code without the
glossary fails here.
"""

import ast
import os
import re

from harness import ROOT
import pytest

pytestmark = pytest.mark.fast

DESIGN = os.path.join(ROOT, 'doc', 'design.md')
PACKAGE = os.path.join(ROOT, 'sim_clock')


def glossary_names() -> dict:
    """Return word -> the names the glossary gives for it."""
    with open(DESIGN) as page:
        text = page.read()
    section = text.split('\n## Vocabulary\n', 1)[1].split('\n## ', 1)[0]
    names = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip('|').split('|')]
        if len(cells) == 3 and cells[0].startswith('**'):
            names[cells[0].strip('*')] = re.findall(r'`([^`]+)`', cells[2])
    return names


def definitions() -> tuple:
    """Return (class -> its member names, every name defined) over the package's modules."""
    members, defined = {}, set()
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            if not name.endswith('.py'):
                continue
            with open(os.path.join(folder, name)) as source:
                tree = ast.parse(source.read())
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    own = members.setdefault(node.name, set())
                    for item in ast.walk(node):
                        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                            own.add(item.name)
                        elif isinstance(item, ast.AnnAssign) and isinstance(
                                item.target, ast.Name):
                            own.add(item.target.id)
                        elif isinstance(item, ast.Attribute) and isinstance(
                                item.ctx, ast.Store):
                            own.add(item.attr)
                    defined.add(node.name)
                    defined.update(own)
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    defined.add(node.name)
                elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    defined.add(node.id)
    return members, defined


def test_the_glossary_has_the_engine_words():
    """The words a reader of the engine meets are there, each with at least one name."""
    names = glossary_names()
    for word in ('frame out', 'due', 'awaited', 'settled', 'released',
                 'what the frames leave to do'):
        assert names.get(word), word


def test_every_name_of_the_glossary_is_defined_in_the_code():
    """A name of the glossary that the code does not define is named, with its word."""
    members, defined = definitions()
    missing = []
    for word, names in glossary_names().items():
        for name in names:
            if '/' in name:
                found = os.path.exists(os.path.join(ROOT, name))
            elif '.' in name:
                owner, member = name.split('.', 1)
                found = member in members.get(owner, ())
            else:
                found = name in defined
            if not found:
                missing.append(f'{word}: {name}')
    assert not missing
