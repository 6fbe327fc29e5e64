"""Tiny data sets in upstream sources' own input formats, made here, reproducibly, so a test can
run an upstream trainer whose input is files (no synthetic mode) without downloading anything.

- `tfrecord`: TFRecord files of tf.train.Example records, written without TensorFlow.
- `tf_models`: tensorflow/models' inputs: ImageNet-style JPEG records (official/vision's
  classification decoder) and BERT pretraining records (create_pretraining_data.py's features).
- `paddleclas`: a PaddleClas checkout laid out from the installed package (its trainer, v2.4.0's
  ResNet-50 config) and an ImageNet-style folder with its label list.
"""
