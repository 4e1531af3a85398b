"""The project's spiders: ``docs``."""
