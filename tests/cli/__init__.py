"""The command line: the demo, and bad values refused as argparse does."""
