"""Model providers behind one small streaming protocol (see `base.py`)."""
