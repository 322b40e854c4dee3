"""The host side (Python 3.11, the noxfile): environment definitions and building their virtualenvs."""
