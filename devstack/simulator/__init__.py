"""A faithful, stateful stand-in for the provider servers: the calls-capable wuzapi server (root),
a plain wuzapi (`/wuzapi`), an Evolution API v2 (`/evolution`) and a Meta Cloud API (`/meta`)."""

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
