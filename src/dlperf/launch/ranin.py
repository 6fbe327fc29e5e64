"""What a run's workload ran in, as its record states it (RunRecord.ran_in): a container the
site ran it in, the framework's own environment, or an interpreter on the node without either.

An upstream release names the image it is meant to run in (Release.environment); a run says it
ran there only where that image is the container it ran in. The local backend, and Slurm without
a site container, run the source's `python` option on the node: no image at all.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RanIn:
    container: str  # the image the site ran it in ("": none)
    environment: str  # the framework's own environment's identity ("": none of its own)
    requirements: str  # the pins that environment was built from ("": none, or the site's)
    python: str  # the interpreter it ran with ("": dlperf's own on the node)
    packages: tuple[tuple[str, str], ...]  # versions the node's facts saw (dlperf's interpreter)
    intended: str  # the environment (an image or an envs/ file) the source names at its release

    @property
    def in_intended(self) -> bool:
        """It ran in what its source names: that image as its container, or its own environment
        built from those pins."""
        if self.container:
            return self.container == self.intended
        return bool(self.requirements and self.intended) and self.requirements.endswith(
            self.intended
        )
