"""NVIDIA DeepLearningExamples: what its NGC adapters (ngc_pytorch, ngc_tensorflow, ngc_mxnet)
share. DLPerf v1.0 ran it at fixed commits in the NGC 20.03 containers; release `current` is its
last commit (DLE_CURRENT) in containers that run on Hopper. docs/upstream-releases.md says what was
read from which file and what is not verified."""

from __future__ import annotations

DLE = "NVIDIA/DeepLearningExamples"
DLE_ROOT = "/workspace/DeepLearningExamples"
# DeepLearningExamples master, April 2024 (its last commit). PyTorch ConvNets last changed at
# a684cf0 and PyTorch BERT at a0781f8 (March 2023); TensorFlow 1.x models were retired at 9de48bc.
DLE_CURRENT = "729963dd47e7c8bd462ad10bfac7a7b0b604e6dd"
