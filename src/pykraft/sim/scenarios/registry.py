"""Every scenario by name: the builders named with `@scenario` in the scenario modules listed here, collected
explicitly (importing a scenario module registers nothing, so no module has to be imported for its side effect
and the modules need no bottom-of-file imports of each other)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType, ModuleType

from pykraft.sim.scenarios import (catalog, data_scenarios, metadata_scenarios, quorum_reassign, reassign_scenarios,
                                   targeted)
from pykraft.sim.scenarios.common import ScenarioBuilder

SCENARIO_MODULES: tuple[ModuleType, ...] = (catalog, metadata_scenarios, reassign_scenarios, targeted, quorum_reassign,
                                            data_scenarios)


def named_builders(*modules: ModuleType) -> dict[str, ScenarioBuilder]:
    """The `@scenario` builders defined in `modules`, in definition order; a name used twice is a bug."""
    found: dict[str, ScenarioBuilder] = {}
    for module in modules:
        for value in vars(module).values():
            name = getattr(value, "scenario_name", None)
            if name is None or getattr(value, "__module__", None) != module.__name__:
                continue  # not a builder, or one imported from another module
            assert name not in found, f"scenario {name!r} is defined twice"
            found[name] = value
    return found


SCENARIOS: Mapping[str, ScenarioBuilder] = MappingProxyType(named_builders(*SCENARIO_MODULES))
