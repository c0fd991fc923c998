#!/usr/bin/env python3
"""Counts the public items a Rust user of the `parcrypt` facade crate can name.

Method: rustdoc's JSON output (nightly) for the facade, then for every workspace crate that
a reachable `pub use` points into. Starting at the facade's root module, every public
module is walked; a `pub use` is followed to the item it names, across crates (a whole-crate
re-export such as `pub use parcrypt_engine as engine` brings in that crate's whole public
tree). Items hidden from the docs (`#[doc(hidden)]`) are not in rustdoc's output and are not
counted. Each item is counted once however many paths reach it.

Reported: items (modules, structs, enums, unions, traits, functions, constants, statics,
type aliases, macros), types (structs, enums, unions, traits, type aliases), modules (not
counting the root), the names at the top level, and members: the public methods and
associated constants of inherent impls, trait items, enum variants and public fields of the
types counted (trait impls such as Clone or Display are not counted).

Usage: scripts/public-items.py [--target-dir DIR] [--list] [--json]
Run from the workspace root (or give --root). Needs `cargo +nightly`.
"""

import argparse
import json
import os
import subprocess
import sys
from collections import Counter

COUNTED = {
    "module",
    "struct",
    "enum",
    "union",
    "trait",
    "function",
    "constant",
    "static",
    "type_alias",
    "macro",
    "proc_macro",
    "trait_alias",
}
TYPES = {"struct", "enum", "union", "trait", "type_alias"}


def kind_of(item):
    """The item's kind: the single key of its `inner` object."""
    inner = item.get("inner")
    if isinstance(inner, dict) and len(inner) == 1:
        return next(iter(inner))
    if isinstance(inner, str):
        return inner
    return "unknown"


class Docs:
    """rustdoc JSON per crate, generated on demand."""

    def __init__(self, root, target_dir, features):
        self.root = root
        self.target_dir = target_dir
        self.features = features
        self.crates = {}

    def load(self, crate):
        if crate in self.crates:
            return self.crates[crate]
        package = crate.replace("_", "-")
        command = ["cargo", "+nightly", "rustdoc", "-q", "-p", package, "--lib"]
        if self.features:
            command += ["--features", self.features]
        command += ["--", "-Z", "unstable-options", "--output-format", "json"]
        environment = dict(os.environ, CARGO_TARGET_DIR=self.target_dir)
        subprocess.run(command, cwd=self.root, env=environment, check=True)
        path = os.path.join(self.target_dir, "doc", crate + ".json")
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        # Own items by path, to find an item another crate re-exports.
        by_path = {}
        for key, summary in data["paths"].items():
            if summary["crate_id"] == 0:
                by_path.setdefault(tuple(summary["path"]), key)
        data["_by_path"] = by_path
        self.crates[crate] = data
        return data


def resolve(docs, crate, data, target):
    """(crate, item id, item) for the target of a `use`, or None outside the workspace."""
    key = str(target)
    if key in data["index"]:
        return crate, key, data["index"][key]
    summary = data["paths"].get(key)
    if summary is None:
        return None
    other = data["external_crates"][str(summary["crate_id"])]["name"]
    if not other.startswith("parcrypt"):
        return None
    other_data = docs.load(other)
    path = tuple(summary["path"])
    other_key = other_data["_by_path"].get(path)
    if other_key is None and len(path) == 1:
        other_key = str(other_data["root"])
    if other_key is None or other_key not in other_data["index"]:
        return None
    return other, other_key, other_data["index"][other_key]


def module_items(data, module_key):
    """(id, item, kind, use) for each item of a module that the crate's index holds; `use`
    is the body of a `use` (an import), else None."""
    for child in data["index"][module_key]["inner"]["module"]["items"]:
        item = data["index"].get(str(child))
        if item is None:
            continue
        kind = kind_of(item)
        use = item["inner"][kind] if kind in ("use", "import") else None
        yield str(child), item, kind, use


def is_glob(use):
    return use.get("is_glob") or use.get("glob")


def walk(docs, crate, module_key, seen, kinds, visited_modules):
    data = docs.load(crate)
    for key, _, kind, use in module_items(data, module_key):
        if use is not None:
            if use.get("id") is None:
                continue
            found = resolve(docs, crate, data, use["id"])
            if found is None:
                continue
            crate_of, key, target = found
            kind = kind_of(target)
            if is_glob(use):
                if kind == "module":
                    walk(docs, crate_of, key, seen, kinds, visited_modules)
                continue
        else:
            crate_of = crate
        note(seen, kinds, crate_of, key, kind)
        if kind == "module" and (crate_of, key) not in visited_modules:
            visited_modules.add((crate_of, key))
            walk(docs, crate_of, key, seen, kinds, visited_modules)


def note(seen, kinds, crate, key, kind):
    if kind in COUNTED and (crate, key) not in seen:
        seen.add((crate, key))
        kinds[kind] += 1


def members(docs, crate, key):
    """The public members of one item: inherent methods and constants, trait items, enum
    variants, public struct fields."""
    data = docs.load(crate)
    item = data["index"][key]
    kind = kind_of(item)
    inner = item["inner"][kind] if isinstance(item["inner"], dict) else {}
    ids = []
    if kind == "trait":
        ids += inner.get("items", [])
    if kind == "enum":
        ids += inner.get("variants", [])
    if kind == "struct":
        plain = inner.get("kind", {})
        if isinstance(plain, dict):
            fields = plain.get("plain", {}).get("fields") or plain.get("tuple") or []
            ids += [field for field in fields if field is not None]
    for impl_id in inner.get("impls", []) if isinstance(inner, dict) else []:
        impl = data["index"].get(str(impl_id))
        if impl is None:
            continue
        body = impl["inner"].get("impl", {})
        if body.get("trait") is None and not body.get("blanket_impl"):
            ids += body.get("items", [])
    return sum(1 for member in ids if str(member) in data["index"])


def top_level(data):
    names = []
    for _, item, kind, use in module_items(data, str(data["root"])):
        if use is None:
            names.append((item["name"], kind))
        elif is_glob(use):
            names.append(use["source"] + "::*")
        else:
            target = data["index"].get(str(use.get("id")))
            if target is not None:
                kind = kind_of(target)
            else:
                summary = data["paths"].get(str(use.get("id")))
                kind = summary["kind"] if summary else "?"
            names.append((use["name"], kind))
    return names


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=".", help="the workspace root")
    parser.add_argument("--crate", default="parcrypt", help="the facade crate")
    parser.add_argument("--target-dir", default="target/public-items")
    parser.add_argument("--features", default="", help="cargo features of the facade")
    parser.add_argument("--list", action="store_true", help="print the top-level names")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    arguments = parser.parse_args()
    target_dir = os.path.abspath(os.path.join(arguments.root, arguments.target_dir))
    docs = Docs(os.path.abspath(arguments.root), target_dir, arguments.features)
    data = docs.load(arguments.crate)
    seen, kinds, visited = set(), Counter(), set()
    walk(docs, arguments.crate, str(data["root"]), seen, kinds, visited)
    top = top_level(data)
    member_count = sum(members(docs, crate, key) for crate, key in seen)
    figures = {
        "members": member_count,
        "items": sum(kinds.values()),
        "types": sum(kinds[kind] for kind in TYPES),
        "modules": kinds["module"],
        "top_level": len(top),
        "by_kind": dict(sorted(kinds.items())),
        "crates": sorted({crate for crate, _ in seen} | {arguments.crate}),
    }
    if arguments.json:
        figures["top_level_names"] = [
            name if isinstance(name, str) else f"{name[0]} ({name[1]})" for name in top
        ]
        json.dump(figures, sys.stdout, indent=2)
        print()
        return
    print(f"public items: {figures['items']}")
    print(f"public types: {figures['types']}")
    print(f"public modules: {figures['modules']}")
    print(f"top-level names: {figures['top_level']}")
    print(f"members (methods, associated constants, variants, fields): {member_count}")
    print(f"items and members: {figures['items'] + member_count}")
    print("by kind: " + ", ".join(f"{k} {v}" for k, v in figures["by_kind"].items()))
    print("crates reached: " + ", ".join(figures["crates"]))
    if arguments.list:
        for name in top:
            print("  " + (name if isinstance(name, str) else f"{name[0]} ({name[1]})"))


if __name__ == "__main__":
    main()
