"""OvercookedV2 on JaxMARL behind the domain seam (``DOMAIN`` in :mod:`.domain`; docs/overcooked_v2.md)."""
