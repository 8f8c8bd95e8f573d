"""The fine-tuning program's offline tasks, built from the docstrings of the
standard library's modules: which package a paragraph comes from
(`offline_task`), or whether two paragraphs come from the same module file
or package (`paragraph_pair_task`). Whole module files go to one part, so no
file gives paragraphs to two parts."""

from _text_input.sources import PARTS

# The offline task's classes: standard-library packages with many
# documented modules each.
PACKAGES = ("asyncio", "email", "importlib", "xml")
FAST_EXAMPLES = {"train": 24, "validation": 12, "test": 12}


def package_split(package, rng, fraction):
    """{"train", "validation", "test"} -> (paragraphs, module files) of one
    package (`package_files`)."""
    return {
        part: ([t for name in sorted(files) for t in files[name]], sorted(files))
        for part, files in package_files(package, rng, fraction).items()
    }


def package_files(package, rng, fraction):
    """{"train", "validation", "test"} -> {module file: paragraphs} of one
    package: whole files, in a fixed random order, go to the test set until
    it holds about `fraction` of the package's paragraphs, and to the
    validation set until it holds about half that; the rest to train."""
    from keras_gmlp.utils import text_corpus

    files = [
        name
        for name in text_corpus.stdlib_module_files(package)
        if text_corpus.module_docstrings(name)
    ]
    texts_of = {
        name: [
            paragraph
            for docstring in text_corpus.module_docstrings(name)
            for paragraph in text_corpus.paragraphs(docstring)
        ]
        for name in files
    }
    order = [files[i] for i in rng.permutation(len(files))]
    total = sum(len(texts) for texts in texts_of.values())
    # A file goes to the first held-out part it fits in: below its share,
    # and not past one and a half times it (the train part keeps the rest).
    targets = {"test": fraction * total, "validation": fraction / 2 * total}
    chosen = {"test": [], "validation": [], "train": []}
    counts = dict.fromkeys(targets, 0)
    for name in order:
        size = len(texts_of[name])
        part = next(
            (
                part
                for part, target in targets.items()
                if counts[part] < target and counts[part] + size <= 1.5 * target
            ),
            "train",
        )
        if part != "train":
            counts[part] += size
        chosen[part].append(name)
    if not chosen["train"]:  # too few files: the last one trains
        chosen["train"].append((chosen["validation"] or chosen["test"]).pop())
    return {
        part: {name: texts_of[name] for name in names} for part, names in chosen.items()
    }


def offline_task(args):
    """({"train", "validation", "test"} -> data, class names, split names):
    each data dict has "texts" (a tuple of one list), "labels" and the
    module "files" they come from; no file gives paragraphs to two parts."""
    import numpy as np

    rng = np.random.default_rng(0)
    split = {part: [] for part in PARTS}
    for label, package in enumerate(PACKAGES):
        for part, (texts, names) in package_split(
            package, rng, args.test_fraction
        ).items():
            split[part].append((label, texts, names))
    data = {}
    for part in PARTS:
        classes = split[part]
        # Equal counts per class, drawn at random but fixed.
        size = min(len(texts) for _, texts, _ in classes)
        if args.fast:
            size = min(size, FAST_EXAMPLES[part])
        texts, labels, files = [], [], []
        for label, class_texts, names in classes:
            chosen = sorted(rng.choice(len(class_texts), size=size, replace=False))
            texts += [class_texts[i] for i in chosen]
            labels += [label] * size
            files += names
        data[part] = {
            "texts": (texts,),
            "labels": np.array(labels, dtype="int32"),
            "files": files,
        }
    names = {part: f"{part} module files" for part in PARTS}
    return data, list(PACKAGES), names


def module_pair_task(args):
    """--offline-task same-module: label 1 for two paragraphs of one module
    file, 0 for two files of one package (`paragraph_pair_task`)."""
    return paragraph_pair_task(args, "module")


def package_pair_task(args):
    """--offline-task same-package: label 1 for two paragraphs of one
    package, 0 for two packages (`paragraph_pair_task`)."""
    return paragraph_pair_task(args, "package")


def paragraph_pair_task(args, same):
    """An offline sentence-pair task, as `offline_task` returns it: each
    part's pairs come from its own module files (`package_files`),
    `args.pairs_per_paragraph` pairs starting from each paragraph of the
    files `paired_files` keeps, balanced; label 1 for
    two paragraphs that share a `same` ("module" file or "package"), 0 for
    two from the next level up (two files of one package, or two
    packages), so the level above alone does not tell."""
    import numpy as np

    rng = np.random.default_rng(0)
    packages = {part: [] for part in PARTS}
    for package in PACKAGES:
        for part, files in package_files(package, rng, args.test_fraction).items():
            packages[part].append(files)
    data = {}
    for part in PARTS:
        kept = paired_files(packages[part], same)
        texts = [list(files.values()) for files in kept]
        places = [(p, f, i) for p, files in enumerate(texts)
                  for f, paragraphs in enumerate(files) for i in range(len(paragraphs))]  # fmt: skip
        starts = [places[i] for i in rng.permutation(len(places))]
        if args.fast:
            starts = starts[: FAST_EXAMPLES[part]]
        pairs, labels = [], []
        for number, start in enumerate(starts):
            partners = {0: [], 1: []}
            for place in places:
                if (label := _pairs(start, place, same)) is not None:
                    partners[label].append(place)
            unused = {0: [], 1: []}
            # Each paragraph starts k pairs, "same" and "other" in turn.
            for label in ((number + j) % 2 for j in range(args.pairs_per_paragraph)):
                # A new partner each time while one is left.
                unused[label] = unused[label] or list(partners[label])
                p, f, i = unused[label].pop(rng.integers(len(unused[label])))
                pairs.append((texts[start[0]][start[1]][start[2]], texts[p][f][i]))
                labels.append(label)
        if args.fast:
            pairs, labels = pairs[: FAST_EXAMPLES[part]], labels[: FAST_EXAMPLES[part]]
        data[part] = {
            "texts": tuple(map(list, zip(*pairs))),
            "labels": np.array(labels, dtype="int32"),
            "files": sorted(name for files in kept for name in files),
        }
    names = {part: f"pairs from {part} module files" for part in PARTS}
    return data, [f"other {same}", f"same {same}"], names


def _pairs(start, place, same):
    """1 if the paragraphs at (package, file, paragraph) `start` and `place`
    make a "same" pair, 0 if an "other" pair, None if neither."""
    same_package, same_file = start[0] == place[0], start[:2] == place[:2]
    if start == place or (same == "module" and not same_package):
        return None
    return int(same_file if same == "module" else same_package)


def paired_files(packages, same="module"):
    """Per package ({module file: paragraphs}), its files' paragraphs that
    no other file holds (a docstring repeated in two files would make a
    pair "other module" or "other package" that one file holds). For
    `same="module"`, files left with two or more paragraphs in packages
    left with two or more such files; for "package", packages left with
    two or more paragraphs."""
    import collections

    counts = collections.Counter(
        text for files in packages for texts in files.values() for text in set(texts)
    )
    fewest = 2 if same == "module" else 1
    kept = []
    for files in packages:
        # Once each: a paragraph twice in one file would pair with itself.
        unique = {
            name: list(dict.fromkeys(t for t in texts if counts[t] == 1))
            for name, texts in files.items()
        }
        unique = {name: texts for name, texts in unique.items() if len(texts) >= fewest}
        if (len(unique) if same == "module" else sum(map(len, unique.values()))) > 1:
            kept.append(unique)
    return kept
