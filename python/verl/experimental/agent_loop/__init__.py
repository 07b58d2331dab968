"""verl's agent loop (``verl.experimental.agent_loop``): multi-turn rollouts with tool calling over
``verl.rollout.LLM.generate_async``. Importing the package registers ``single_turn_agent`` and ``tool_agent``."""

from .agent_loop import (AgentLoopBase, AgentLoopMetrics, AgentLoopOutput, AgentLoopWorker, LLMServerClient,
                         TokenOutput, get_agent_loop_class, pad_agent_outputs, register, register_from_config_file)
from .config import AgentConfig, AgentLoopConfig, MultiTurnConfig
from .single_turn_agent_loop import SingleTurnAgentLoop
from .tool_agent_loop import AgentData, ToolAgentLoop, truncate_tool_response
from .tool_parser import FunctionCall, HermesToolParser, ToolParser

__all__ = ["AgentLoopBase", "AgentLoopMetrics", "AgentLoopOutput", "AgentLoopWorker", "LLMServerClient",
           "TokenOutput", "register", "get_agent_loop_class", "register_from_config_file", "pad_agent_outputs",
           "AgentConfig", "AgentLoopConfig", "MultiTurnConfig", "SingleTurnAgentLoop", "ToolAgentLoop", "AgentData",
           "truncate_tool_response", "FunctionCall", "HermesToolParser", "ToolParser"]
