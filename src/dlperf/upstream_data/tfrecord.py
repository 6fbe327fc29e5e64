"""TFRecord files of tf.train.Example records, written with the standard library only.

A TFRecord file is a sequence of records, each `uint64 length, uint32 masked CRC-32C of the
length, data, uint32 masked CRC-32C of the data` (little-endian; tensorflow/core/lib/io/
record_writer.h). The data here is a serialized tf.train.Example (tensorflow/core/example/
example.proto, feature.proto), encoded by hand: the features sorted by name, so the same values
always give the same bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from dlperf.util import atomic_path

# A feature's values: bytes (BytesList), floats (FloatList) or ints (Int64List).
FeatureValues = Sequence[bytes] | Sequence[float] | Sequence[int]


def _crc32c_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC32C = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), as TFRecord frames use it."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _CRC32C[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame(record: bytes) -> bytes:
    """One record as a TFRecord file holds it."""
    length = struct.pack("<Q", len(record))
    return (
        length
        + struct.pack("<I", masked_crc32c(length))
        + record
        + struct.pack("<I", masked_crc32c(record))
    )


def _varint(value: int) -> bytes:
    value &= 0xFFFFFFFFFFFFFFFF  # int64 as protobuf writes it: two's complement, 10 bytes if < 0
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _feature(values: FeatureValues) -> bytes:
    """A Feature message: bytes_list = 1, float_list = 2, int64_list = 3 (packed)."""
    items = list(values)
    if items and all(isinstance(v, bytes) for v in items):
        return _field(1, b"".join(_field(1, v) for v in items))  # type: ignore[arg-type]
    if any(isinstance(v, bytes) for v in items):
        raise TypeError("a feature holds bytes only, or numbers only")
    if any(isinstance(v, float) for v in items):
        return _field(2, _field(1, struct.pack(f"<{len(items)}f", *items)))
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in items):
        raise TypeError(f"a feature holds bytes, floats or ints, not {items[:3]!r}")
    return _field(3, _field(1, b"".join(_varint(v) for v in items)))  # type: ignore[arg-type]


def example(features: Mapping[str, FeatureValues]) -> bytes:
    """A serialized tf.train.Example: Example.features = 1, Features.feature = 1 (map entries of
    key = 1, value = 2), in name order."""
    entries = b"".join(
        _field(1, _field(1, name.encode()) + _field(2, _feature(features[name])))
        for name in sorted(features)
    )
    return _field(1, entries)


def write_tfrecord(path: Path, records: Iterable[bytes]) -> Path:
    """A TFRecord file of these records (uncompressed), written atomically."""
    with atomic_path(path) as temporary:
        with open(temporary, "wb") as out:
            for record in records:
                out.write(frame(record))
    return path
