"""PaddleClas' trainer as the `paddleclas` package ships it, laid out as adapter `paddle` release
`current` expects a checkout, and a tiny ImageNet-style data set for it, made from a seed.

No release of the package holds what the adapter names: the wheels 2.4.0-2.4.2 carry the trainer
(ppcls/engine, ppcls/data, ppcls/loss, ppcls/optimizer; 2.4.2's files are tag v2.4.0's), later
ones only the models and the inference API, and none carries tools/train.py or ppcls/configs. So
`lay_out_checkout` makes `<root>/PaddleClas` with

- `ppcls/<each entry of the installed package's ppcls>`: links to the package's own files;
- `ppcls/configs/ImageNet/ResNet/RESNET50_CONFIG`: the training settings of the ResNet-50 config
  of the engine's own release (PaddleClas v2.4.0, 3a28ee2, ppcls/configs/ImageNet/ResNet/
  ResNet50.yaml, restated below; release/2.5.2's adds an `AMP` section, off, and
  `Arch.pretrained: True`, which the adapter turns off). The engine of 2.4.x reads any `AMP`
  section as "AMP on", so 2.5.2's file would not train in fp32 there;
- `tools/train.py`: the entry, dlperf's own (`paddleclas_train.py` beside this module), which
  does what PaddleClas' tools/train.py does: parse `-c`/`-o`, build the Engine, train.

`make_imagenet_folder` writes what PaddleClas' ImageNetDataset reads: JPEGs under
`train/<synset>/` and `train_list.txt`, one `train/<synset>/<name>.JPEG <label>` a line.

Command line: `python -m dlperf.upstream_data.paddleclas checkout ROOT PYTHON` or
`... imagenet FOLDER [--images N ...]`.
"""

from __future__ import annotations

import argparse
import io
import random
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml

from dlperf.util import atomic_path

CHECKOUT = "PaddleClas"  # the folder under source_root the adapter reads (its repository's name)
RESNET50_CONFIG = "ppcls/configs/ImageNet/ResNet/ResNet50.yaml"
ENTRY = "tools/train.py"
NORMALIZE = {
    "scale": "1.0/255.0",
    "mean": [0.485, 0.456, 0.406],
    "std": [0.229, 0.224, 0.225],
    "order": "",
}


def _sampler(shuffle: bool) -> dict:
    return {
        "name": "DistributedBatchSampler",
        "batch_size": 64,
        "drop_last": False,
        "shuffle": shuffle,
    }


def _dataset(split: str, transforms: list[dict]) -> dict:
    return {
        "name": "ImageNetDataset",
        "image_root": "./dataset/ILSVRC2012/",
        "cls_label_path": f"./dataset/ILSVRC2012/{split}_list.txt",
        "transform_ops": [{"DecodeImage": {"to_rgb": True, "channel_first": False}}, *transforms],
    }


# PaddleClas v2.4.0's ppcls/configs/ImageNet/ResNet/ResNet50.yaml, its training and evaluation
# settings (its Infer section, for prediction, is left out).
RESNET50_SETTINGS: dict = {
    "Global": {
        "checkpoints": None,
        "pretrained_model": None,
        "output_dir": "./output/",
        "device": "gpu",
        "save_interval": 1,
        "eval_during_train": True,
        "eval_interval": 1,
        "epochs": 120,
        "print_batch_step": 10,
        "use_visualdl": False,
        "image_shape": [3, 224, 224],
        "save_inference_dir": "./inference",
        "to_static": False,
    },
    "Arch": {"name": "ResNet50", "class_num": 1000},
    "Loss": {"Train": [{"CELoss": {"weight": 1.0}}], "Eval": [{"CELoss": {"weight": 1.0}}]},
    "Optimizer": {
        "name": "Momentum",
        "momentum": 0.9,
        "lr": {
            "name": "Piecewise",
            "learning_rate": 0.1,
            "decay_epochs": [30, 60, 90],
            "values": [0.1, 0.01, 0.001, 0.0001],
        },
        "regularizer": {"name": "L2", "coeff": 0.0001},
    },
    "DataLoader": {
        "Train": {
            "dataset": _dataset(
                "train",
                [
                    {"RandCropImage": {"size": 224}},
                    {"RandFlipImage": {"flip_code": 1}},
                    {"NormalizeImage": NORMALIZE},
                ],
            ),
            "sampler": _sampler(shuffle=True),
            "loader": {"num_workers": 4, "use_shared_memory": True},
        },
        "Eval": {
            "dataset": _dataset(
                "val",
                [
                    {"ResizeImage": {"resize_short": 256}},
                    {"CropImage": {"size": 224}},
                    {"NormalizeImage": NORMALIZE},
                ],
            ),
            "sampler": _sampler(shuffle=False),
            "loader": {"num_workers": 4, "use_shared_memory": True},
        },
    },
    "Metric": {"Train": [{"TopkAcc": {"topk": [1, 5]}}], "Eval": [{"TopkAcc": {"topk": [1, 5]}}]},
}


def package_dir(python: str) -> Path:
    """Where the interpreter's environment has the `paddleclas` package (not imported: importing
    it prints its model table and sets up ppcls' logger)."""
    script = (
        "import importlib.util as u; s = u.find_spec('paddleclas'); "
        "print(s.submodule_search_locations[0] if s else '')"
    )
    out = subprocess.run([python, "-c", script], capture_output=True, text=True, check=True)
    found = out.stdout.strip()
    if not found or not (Path(found) / "ppcls" / "engine").is_dir():
        raise RuntimeError(
            f"{python}: no paddleclas package with its trainer (ppcls/engine) is installed; "
            "build envs/paddleclas.txt (paddleclas 2.4.2) and pass its interpreter"
        )
    return Path(found)


def lay_out_checkout(root: Path, python: str) -> Path:
    """`<root>/PaddleClas` from the package in `python`'s environment; returns that folder."""
    package = package_dir(python)
    checkout = root / CHECKOUT
    if checkout.exists():
        shutil.rmtree(checkout)
    ppcls = checkout / "ppcls"
    ppcls.mkdir(parents=True)
    for entry in sorted((package / "ppcls").iterdir()):
        if entry.name != "__pycache__":
            (ppcls / entry.name).symlink_to(entry)
    config = checkout / RESNET50_CONFIG
    config.parent.mkdir(parents=True)
    with atomic_path(config) as tmp:
        tmp.write_text(yaml.safe_dump(RESNET50_SETTINGS, sort_keys=False))
    entry_script = checkout / ENTRY
    entry_script.parent.mkdir()
    shutil.copy(Path(__file__).with_name("paddleclas_train.py"), entry_script)
    return checkout


@dataclass(frozen=True)
class ImageFolderSpec:
    images: int = 16
    classes: int = 4  # labels 0..classes-1 (the model's head stays 1000-way)
    image_size: int = 32  # pixels a side (RandCropImage resizes to its own size)
    seed: int = 0
    jpeg_quality: int = 90


def make_imagenet_folder(folder: Path, spec: ImageFolderSpec = ImageFolderSpec()) -> Path:
    """JPEGs under `folder/train/<synset>/` and `folder/train_list.txt`; returns the list file."""
    if spec.images < 1 or spec.classes < 1:
        raise ValueError(f"{spec}: need at least one image and one class")
    rng = random.Random(spec.seed)
    lines = []
    for index in range(spec.images):
        label = index % spec.classes
        relative = f"train/n{label:08d}/n{label:08d}_{index}.JPEG"
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(_jpeg(_pixels(rng, label, spec.image_size), spec))
        lines.append(f"{relative} {label}\n")
    listing = folder / "train_list.txt"
    with atomic_path(listing) as tmp:
        tmp.write_text("".join(lines))
    return listing


def _pixels(rng: random.Random, label: int, size: int) -> bytes:
    base = [(label * 53 + c * 97) % 256 for c in range(3)]  # a colour per class
    noise = rng.randbytes(size * size * 3)
    return bytes((base[k % 3] + noise[k] // 4) % 256 for k in range(size * size * 3))


def _jpeg(pixels: bytes, spec: ImageFolderSpec) -> bytes:
    from PIL import Image  # Pillow, a dependency of matplotlib

    out = io.BytesIO()
    size = spec.image_size
    Image.frombytes("RGB", (size, size), pixels).save(out, "JPEG", quality=spec.jpeg_quality)
    return out.getvalue()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m dlperf.upstream_data.paddleclas")
    sub = parser.add_subparsers(dest="what", required=True)
    checkout = sub.add_parser("checkout", help="lay out <root>/PaddleClas from the package")
    checkout.add_argument("root", type=Path)
    checkout.add_argument("python", help="the interpreter of envs/paddleclas.txt")
    images = sub.add_parser("imagenet", help="a tiny ImageNet-style folder and train_list.txt")
    images.add_argument("folder", type=Path)
    images.add_argument("--images", type=int, default=ImageFolderSpec.images)
    images.add_argument("--classes", type=int, default=ImageFolderSpec.classes)
    images.add_argument("--image-size", type=int, default=ImageFolderSpec.image_size)
    images.add_argument("--seed", type=int, default=ImageFolderSpec.seed)
    args = parser.parse_args(argv)
    if args.what == "checkout":
        print(lay_out_checkout(args.root, args.python))
    else:
        spec = ImageFolderSpec(args.images, args.classes, args.image_size, args.seed)
        print(make_imagenet_folder(args.folder, spec))


if __name__ == "__main__":
    main()
