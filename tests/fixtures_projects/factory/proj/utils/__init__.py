from .buffers import make_buffer as new_buffer  # a re-export
