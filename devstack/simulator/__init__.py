"""A faithful, stateful stand-in for an AtendroZAP/wuzapi-style provider server (seed 003)."""

from devstack.simulator.app import SimulatorApp
from devstack.simulator.control import SimulatorControl
from devstack.simulator.schemas import SimCapabilities, SimulatorConfig
from devstack.simulator.server import Simulator, create_app
from devstack.simulator.webhooks import signature_header

__all__ = [
    "SimCapabilities",
    "Simulator",
    "SimulatorApp",
    "SimulatorConfig",
    "SimulatorControl",
    "create_app",
    "signature_header",
]
