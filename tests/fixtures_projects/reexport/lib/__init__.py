from .kernels import copy_kernel
from .launch import launch

__all__ = ["copy_kernel", "launch"]
