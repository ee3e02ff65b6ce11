"""The kernel: what every slice builds on, naming none of them."""
