"""Upper bounds of the counts a user may ask for (CLI options and the files they name).

One constant per idea, so that an episode length or a sample size is capped the same way
everywhere (a command line, a grid file, a partner file). The bounds are generous -- far above
any run this package is meant for -- and exist so that a typo (an extra digit, a stray
exponent) is refused at once instead of running for days or asking for terabytes.
"""

from __future__ import annotations

from beliefgate.errors import InputError

#: longest episode, in steps (``--horizon``; ``horizon`` of grid and partner files)
MAX_HORIZON = 100_000
#: most episodes per setting (``--seeds N``, ``--episodes``, ``count`` of a grid's seed range)
MAX_SEED_COUNT = 100_000
#: MCMC chains of one fit (``fit --chains``)
MAX_CHAINS = 256
#: posterior draws per chain, NUTS warm-up iterations per chain (``fit --draws``, ``--warmup``)
MAX_DRAWS = 1_000_000
#: SVI optimisation steps (``fit --svi-steps``)
MAX_SVI_STEPS = 10_000_000
#: values of one parameter in a one-at-a-time sweep (``sensitivity oat --param NAME=LOW:HIGH:N``)
MAX_OAT_VALUES = 1_000
#: Sobol base sample size / Morris trajectories (``sensitivity global --n``; a power of 2 for Sobol)
MAX_GLOBAL_N = 2 ** 20
#: game steps per second of `beliefgate play` (``--tick-hz``)
MIN_TICK_HZ = 0.5
MAX_TICK_HZ = 60.0
#: players of one episode (a seat is a player slot below this)
MAX_PLAYERS = 9
#: bootstrap resamples of a confidence interval (``--bootstrap``, ``--n-boot``, ``--resamples``)
MAX_RESAMPLES = 1_000_000
#: lists and mappings inside each other in a JSON/YAML file a user names (grid, partner, kappa data,
#: trajectory log lines; :func:`beliefgate.fileio.parse_data`): the deepest real one nests about 8
MAX_DATA_DEPTH = 100
#: skills of one gate (``Gate.from_logprobs(num_skills)``; the service's ``num_skills`` and table rows)
MAX_SKILLS = 64
#: branches of one kappa decision (``Kappa(branches)``, kappa data records, the service's ``branches``):
#: the state holds K x K matrices and a K-column design, its posterior K x 64 draws
MAX_BRANCHES = 64


class SizeLimitError(InputError):
    """A count above one of these limits, refused before anything of that size is allocated; the
    message names the count and the limit."""


def check_count(count: int, limit: int, what: str, error: type = SizeLimitError, **fields) -> None:
    """Refuse ``count`` above ``limit`` with ``error(message, **fields)``; ``what`` names the count
    with its value (``f"num_skills {n}"``, ``f"{n} branches"``): ``num_skills 100000000 is over
    the limit (at most 64)``."""
    if count > limit:
        raise error(f"{what} is over the limit (at most {limit})", **fields)

__all__ = ["MAX_DATA_DEPTH", "MAX_SKILLS", "MAX_BRANCHES", "SizeLimitError", "check_count", "MAX_HORIZON", "MAX_PLAYERS", "MAX_SEED_COUNT", "MAX_CHAINS", "MAX_DRAWS", "MAX_SVI_STEPS", "MAX_OAT_VALUES",
           "MAX_GLOBAL_N", "MAX_RESAMPLES", "MIN_TICK_HZ", "MAX_TICK_HZ"]
