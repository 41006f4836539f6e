"""The media ids a Cloud API number got for a file, kept per number and sha256 while Meta keeps them."""

from __future__ import annotations

from datetime import timedelta

from switchboard import bootstrap
from switchboard.core.clock import utcnow
from switchboard.messages.dynamo import UPLOADED_MEDIA_SECONDS, UploadedMediaRepository
from tools.support.aws import AwsResources

DIGEST = "a" * 64


def test_a_media_id_is_kept_per_number_and_forgotten_before_meta_drops_it(aws: AwsResources) -> None:
    now = utcnow()
    moments = [now]
    uploads = UploadedMediaRepository(bootstrap.table(), clock=lambda: moments[-1])

    uploads.remember("phone-1", DIGEST, "media-1")

    assert uploads.media_id("phone-1", DIGEST) == "media-1"
    assert uploads.media_id("phone-2", DIGEST) is None  # another number uploads its own
    assert uploads.media_id("phone-1", "b" * 64) is None
    moments.append(now + timedelta(seconds=UPLOADED_MEDIA_SECONDS + 1))
    assert uploads.media_id("phone-1", DIGEST) is None
    assert UPLOADED_MEDIA_SECONDS < 30 * 24 * 3600
