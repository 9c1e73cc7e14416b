from .base import Base as Base
