"""Tiny inputs of tensorflow/models' trainers (adapter `tensorflow2`, release `current`), in the
formats the Model Garden reads, made from a seed: the same arguments give the same bytes.

- ImageNet-style classification records (official/vision/dataloaders/classification_input.py:
  `image/encoded` a JPEG, `image/class/label` an int64; the other fields as the ImageNet
  conversion script, official/vision/data/imagenet_to_tfrecord or the older
  build_imagenet_data.py, writes them), in files `train-0000i-of-0000n` (resnet_imagenet reads
  `<data_dir>/train*`). Labels run 1..classes: label 0 is the background class of the 1001-way
  ImageNet head.
- BERT pretraining records (official/nlp/data/pretrain_dataloader.py, the features of
  create_pretraining_data.py: `input_ids`, `input_mask`, `segment_ids`, `masked_lm_positions`,
  `masked_lm_ids`, `masked_lm_weights`, `next_sentence_labels`), `[CLS] A [SEP] B [SEP]` with 15%
  of the tokens masked (80% [MASK], 10% a random word, 10% kept), in files
  `pretrain-0000i-of-0000n.tfrecord` (bert/pretraining reads `<data_dir>/*`: the folder holds
  nothing else).

Command line: `python -m dlperf.upstream_data.tf_models imagenet|bert FOLDER [--examples N ...]`.
"""

from __future__ import annotations

import argparse
import io
import random
from dataclasses import dataclass
from pathlib import Path

from dlperf.upstream_data.tfrecord import example, write_tfrecord

# bert-base-uncased's vocab.txt: [CLS], [SEP], [MASK]; real words start at 999 ("!")
CLS_ID, SEP_ID, MASK_ID = 101, 102, 103
FIRST_WORD_ID = 999
MASKED_FRACTION = 0.15


@dataclass(frozen=True)
class ImageNetSpec:
    examples: int = 16
    files: int = 2
    image_size: int = 64  # pixels a side (the trainer crops and resizes to its input_size)
    classes: int = 10  # labels 1..classes
    seed: int = 0
    jpeg_quality: int = 90


@dataclass(frozen=True)
class BertSpec:
    examples: int = 16
    files: int = 2
    seq_length: int = 128
    max_predictions_per_seq: int = 20
    vocab_size: int = 30522
    seed: int = 0


def shard_names(prefix: str, files: int, suffix: str = "") -> list[str]:
    return [f"{prefix}-{i:05d}-of-{files:05d}{suffix}" for i in range(files)]


def make_imagenet(folder: Path, spec: ImageNetSpec = ImageNetSpec()) -> list[Path]:
    """ImageNet-style train records under `folder`; returns the files written."""
    if spec.examples < spec.files or spec.files < 1 or spec.classes < 1:
        raise ValueError(f"{spec}: need at least one example per file and one class")
    rng = random.Random(spec.seed)
    records = [_image_record(rng, i, spec) for i in range(spec.examples)]
    return _write_shards(folder, shard_names("train", spec.files), records)


def _image_record(rng: random.Random, index: int, spec: ImageNetSpec) -> bytes:
    label = 1 + index % spec.classes
    size = spec.image_size
    base = [(label * 53 + c * 97) % 256 for c in range(3)]  # a colour per class
    noise = rng.randbytes(size * size * 3)
    pixels = bytes(
        (base[k % 3] + (k // 3 % size + k // (3 * size)) * 2 + noise[k] // 8) % 256
        for k in range(size * size * 3)
    )
    synset = f"n{label:08d}".encode()
    return example(
        {
            "image/encoded": [_jpeg(pixels, size, spec.jpeg_quality)],
            "image/format": [b"JPEG"],
            "image/colorspace": [b"RGB"],
            "image/channels": [3],
            "image/height": [size],
            "image/width": [size],
            "image/class/label": [label],
            "image/class/synset": [synset],
            "image/class/text": [b"class " + synset],
            "image/filename": [f"{synset.decode()}_{index}.JPEG".encode()],
        }
    )


def _jpeg(pixels: bytes, size: int, quality: int) -> bytes:
    try:
        from PIL import Image  # Pillow, a dependency of matplotlib
    except ImportError as err:  # pragma: no cover - matplotlib requires it
        raise RuntimeError(f"making JPEG records needs Pillow ({err})") from None
    out = io.BytesIO()
    Image.frombytes("RGB", (size, size), pixels).save(out, "JPEG", quality=quality)
    return out.getvalue()


def make_bert_pretraining(folder: Path, spec: BertSpec = BertSpec()) -> list[Path]:
    """BERT pretraining records under `folder`; returns the files written."""
    if spec.seq_length < 8 or spec.max_predictions_per_seq < 1:
        raise ValueError(f"{spec}: seq_length must be at least 8, max_predictions at least 1")
    if spec.vocab_size <= MASK_ID + 1:
        raise ValueError(f"{spec}: vocab_size must exceed {MASK_ID + 1} ([CLS], [SEP], [MASK])")
    if spec.examples < spec.files or spec.files < 1:
        raise ValueError(f"{spec}: need at least one example per file")
    rng = random.Random(spec.seed)
    records = [_bert_record(rng, spec) for _ in range(spec.examples)]
    return _write_shards(folder, shard_names("pretrain", spec.files, ".tfrecord"), records)


def _bert_record(rng: random.Random, spec: BertSpec) -> bytes:
    first_word = FIRST_WORD_ID if spec.vocab_size > 2 * FIRST_WORD_ID else MASK_ID + 1
    words = range(first_word, spec.vocab_size)
    length = rng.randint(spec.seq_length // 2, spec.seq_length - 3)  # words of A and B
    a = rng.randint(1, length - 1)
    tokens = [CLS_ID, *rng.choices(words, k=a), SEP_ID, *rng.choices(words, k=length - a), SEP_ID]
    segments = [0] * (a + 2) + [1] * (length - a + 1)
    candidates = [i for i, t in enumerate(tokens) if t not in (CLS_ID, SEP_ID)]
    rng.shuffle(candidates)
    count = min(spec.max_predictions_per_seq, max(1, round(len(tokens) * MASKED_FRACTION)))
    positions = sorted(candidates[:count])
    labels = [tokens[p] for p in positions]
    for p in positions:
        draw = rng.random()
        tokens[p] = MASK_ID if draw < 0.8 else tokens[p] if draw < 0.9 else rng.choice(words)
    pad, pad_masked = spec.seq_length - len(tokens), spec.max_predictions_per_seq - count
    return example(
        {
            "input_ids": tokens + [0] * pad,
            "input_mask": [1] * len(tokens) + [0] * pad,
            "segment_ids": segments + [0] * pad,
            "masked_lm_positions": positions + [0] * pad_masked,
            "masked_lm_ids": labels + [0] * pad_masked,
            "masked_lm_weights": [1.0] * count + [0.0] * pad_masked,
            "next_sentence_labels": [rng.randint(0, 1)],  # 1: B is a random next sentence
        }
    )


def _write_shards(folder: Path, names: list[str], records: list[bytes]) -> list[Path]:
    """Records dealt round-robin over the files (every file gets some)."""
    return [
        write_tfrecord(Path(folder) / name, records[i :: len(names)])
        for i, name in enumerate(names)
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kind", choices=["imagenet", "bert"])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--examples", type=int, default=16)
    parser.add_argument("--files", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--image-size", type=int, default=ImageNetSpec.image_size)
    parser.add_argument("--seq-length", type=int, default=BertSpec.seq_length)
    parser.add_argument("--max-predictions", type=int, default=BertSpec.max_predictions_per_seq)
    parser.add_argument("--vocab-size", type=int, default=BertSpec.vocab_size)
    args = parser.parse_args(argv)
    common = {"examples": args.examples, "files": args.files, "seed": args.seed}
    if args.kind == "imagenet":
        files = make_imagenet(args.folder, ImageNetSpec(image_size=args.image_size, **common))
    else:
        spec = BertSpec(
            seq_length=args.seq_length,
            max_predictions_per_seq=args.max_predictions,
            vocab_size=args.vocab_size,
            **common,
        )
        files = make_bert_pretraining(args.folder, spec)
    for path in files:
        print(path)


if __name__ == "__main__":
    main()
