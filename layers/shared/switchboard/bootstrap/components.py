"""The components of one container: every adapter and service, built on first use and kept.

A `Component` is a named factory of the composition root; `Components` builds each one at most
once from its settings and AWS session, or hands back the object a caller named in its overrides
instead (`Components(overrides={"send_queue": FakeQueue()})`). A profile either builds its own
`Components` (given settings, a session or overrides) or uses this process's (`current()`): a
Lambda container runs one function, so its process's components are that function's.

`reset()` forgets everything this process built and its settings (tests, after changing the
environment: a new container); `overridden(...)` replaces named components of this process's
components for a while (tests, for functions the local stack loads like Lambda does).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from switchboard.core.settings import Settings, get_settings

if TYPE_CHECKING:
    import boto3

T = TypeVar("T")

# Every component's name, so that an override naming none of them is refused, not ignored.
NAMES: set[str] = set()


class Component(Generic[T]):
    """A named factory; `component(c)` is what `c` built (or was handed) under that name, and
    `component()` what this process's components hold."""

    def __init__(self, build: Callable[[Components], T]) -> None:
        self.build = build
        self.name = build.__name__
        self.__doc__ = build.__doc__
        NAMES.add(self.name)

    def __call__(self, components: Components | None = None) -> T:
        return (components or current()).get(self)

    def __repr__(self) -> str:
        return f"<component {self.name}>"


def component(build: Callable[[Components], T]) -> Component[T]:
    return Component(build)


def known(overrides: Mapping[str, object]) -> dict[str, object]:
    """`overrides`, each of which names a component (a misspelt one would be silently ignored)."""
    unknown = sorted(set(overrides) - NAMES)
    if unknown:
        raise TypeError(f"no component is called {', '.join(unknown)}")
    return dict(overrides)


class Components:
    """What one container built: settings, the AWS session and clients, every component."""

    def __init__(
        self,
        settings: Settings | None = None,
        aws: boto3.session.Session | None = None,
        overrides: Mapping[str, object] | None = None,
    ) -> None:
        self._settings = settings
        self._given_aws = aws
        self._aws = aws
        self.overrides = known(overrides or {})
        self._built: dict[str, Any] = {}
        self._clients: dict[str, Any] = {}

    @property
    def settings(self) -> Settings:
        """The settings given, else the environment's (read once per process, `reset()` forgets it)."""
        return self._settings or get_settings()

    @property
    def session(self) -> boto3.session.Session:
        """The session given, else AWS_REGION or what boto3 finds (AWS_DEFAULT_REGION, the profile's)."""
        if self._aws is None:
            import boto3

            self._aws = boto3.session.Session(region_name=self.settings.aws_region)
        return self._aws

    def client(self, service: str) -> Any:
        """One boto3 client per service (`AWS_ENDPOINT_URL`, read by boto3 itself, points each at
        the local stack or moto)."""
        if service not in self._clients:
            self._clients.setdefault(service, self.session.client(service))
        return self._clients[service]

    def get(self, built: Component[T]) -> T:
        if built.name in self.overrides:
            return cast("T", self.overrides[built.name])
        if built.name not in self._built:
            # Two threads may build it at once: both then use the first one kept.
            self._built.setdefault(built.name, built.build(self))
        return cast("T", self._built[built.name])

    def built(self, built: Component[T]) -> T | None:
        """What was built (or handed) under that name; None while nothing needed it."""
        if built.name in self.overrides:
            return cast("T", self.overrides[built.name])
        return cast("T | None", self._built.get(built.name))

    def forget(self) -> None:
        """Drop what was built and the session (overrides stay)."""
        self._built.clear()
        self._clients.clear()
        self._aws = self._given_aws


_current = Components()


def current() -> Components:
    """This process's components: what a function built without arguments of its own uses."""
    return _current


def reset() -> None:
    """Forget every component this process built, its session and the settings (a new container)."""
    get_settings.cache_clear()
    _current.forget()


@contextmanager
def overridden(**replacements: object) -> Iterator[None]:
    """This process's components with `replacements` (by component name) for the block, as a new
    container; afterwards the previous overrides, again as a new container."""
    previous = _current.overrides
    _current.overrides = {**previous, **known(replacements)}
    reset()
    try:
        yield
    finally:
        _current.overrides = previous
        reset()
