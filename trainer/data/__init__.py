"""The pictures and captions: scanning a training folder, reading pictures, buckets, and the batches the loop eats."""
