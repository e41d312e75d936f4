"""The pipeline core and the ordered systems that handle every turn."""
