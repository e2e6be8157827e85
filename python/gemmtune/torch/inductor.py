"""torch.compile integration."""


def enable(**kwargs):
    raise NotImplementedError


def disable():
    raise NotImplementedError
