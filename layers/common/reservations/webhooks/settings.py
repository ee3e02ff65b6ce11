"""The webhooks slice's settings (``kernel.settings.section``): the delivery queue and the
local receiver allowance."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from reservations.kernel.settings import required, section


class WebhookSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    # The webhook sender's queue (WebhookSenderFunction only), whose messages it puts back
    # until their next attempt. No default: it names a resource.
    webhook_delivery_queue_url: str | None = Field(
        None, alias="WEBHOOK_DELIVERY_QUEUE_URL", min_length=1
    )
    # The stack's WebhookAllowLocalReceiver (off unless the local stack turns it on): a
    # subscription may name http://127.0.0.1:<port>, reached at WEBHOOK_LOCAL_RECEIVER_HOST.
    webhook_allow_local_receiver: bool = Field(False, alias="WEBHOOK_ALLOW_LOCAL_RECEIVER")
    webhook_local_receiver_host: str = Field(
        "127.0.0.1", alias="WEBHOOK_LOCAL_RECEIVER_HOST", min_length=1
    )


settings = section(WebhookSettings)


def webhook_delivery_queue_url() -> str:
    """The webhook delivery queue; SettingsError naming the variable when it is not set."""
    return required("WEBHOOK_DELIVERY_QUEUE_URL", settings().webhook_delivery_queue_url)
