"""One interface to every model a researcher evaluates: `get_model(spec).generate(request)`.

    import asyncio
    from chronokg.models import ModelRequest, get_model

    async def main() -> None:
        async with get_model("openai/gpt-4o-mini") as model:
            completion = await model.generate(ModelRequest.chat("Who was UN Secretary-General in 2010?"))
            print(completion.text, completion.usage)

    asyncio.run(main())

Importing this package loads no HTTP client: providers are imported when `get_model` needs them.
"""

from chronokg.models.cache import ResponseCache
from chronokg.models.client_errors import (
    ModelConfigError,
    ModelRequestError,
    ModelTimeout,
    RetriesExhausted,
    TransientModelError,
)
from chronokg.models.clients import CLIENTS, ClientFactory, get_model, known_models
from chronokg.models.limits import Limits
from chronokg.models.protocol import ModelClient
from chronokg.models.retry import RetryPolicy
from chronokg.models.spec import ClientOptions
from chronokg.models.types import (
    ChatMessage,
    Choice,
    Completion,
    GenerateConfig,
    ModelRequest,
    ResponseFormat,
    TokenLogprob,
    ToolCall,
    ToolSpec,
    TopLogprob,
    Usage,
)
from chronokg.models.usage import ModelUsage, Prices

__all__ = [
    "CLIENTS",
    "ChatMessage",
    "Choice",
    "ClientFactory",
    "ClientOptions",
    "Completion",
    "GenerateConfig",
    "Limits",
    "ModelClient",
    "ModelConfigError",
    "ModelRequest",
    "ModelRequestError",
    "ModelTimeout",
    "ModelUsage",
    "Prices",
    "ResponseCache",
    "ResponseFormat",
    "RetriesExhausted",
    "RetryPolicy",
    "TokenLogprob",
    "ToolCall",
    "ToolSpec",
    "TopLogprob",
    "TransientModelError",
    "Usage",
    "get_model",
    "known_models",
]
