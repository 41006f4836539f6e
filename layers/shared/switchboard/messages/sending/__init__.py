"""The send worker, as a pipeline of steps named by role (see `service` for the whole path):
`plan`, `gates`, `attempt`, `outcome`, composed by `service.SendingService`."""

from switchboard.messages.sending.service import SendingService, SendWorker

__all__ = ["SendWorker", "SendingService"]
