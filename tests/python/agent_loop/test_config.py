"""The agent loop's settings from verl's rollout section (``multi_turn.*``, ``agent.*``), their checks, and custom
agent loops registered from ``rollout.agent.agent_loop_config_path``."""

from __future__ import annotations

import textwrap

import pytest
from omegaconf import OmegaConf

from verl.experimental.agent_loop import (AgentLoopBase, AgentLoopConfig, AgentLoopOutput, AgentLoopWorker,
                                          get_agent_loop_class)

from .conftest import ScriptedLLM

# verl 0.9.1's rollout.yaml defaults for these sections (plus the knobs of other rollout parts, not read here)
VERL_ROLLOUT = {
    "name": "vllm", "prompt_length": 512, "response_length": 512, "temperature": 1.0,
    "multi_turn": {"_target_": "verl.workers.config.MultiTurnConfig", "enable": False, "max_assistant_turns": None,
                   "tool_config_path": None, "function_tool_path": None, "max_user_turns": None,
                   "max_parallel_calls": 1, "max_tool_response_length": 256, "tool_response_truncate_side": "middle",
                   "use_inference_chat_template": False, "tokenization_sanity_check_mode": "strict",
                   "format": "hermes", "num_repeat_rollouts": None},
    "agent": {"_target_": "verl.workers.config.AgentLoopConfig", "num_workers": 8,
              "default_agent_loop": "single_turn_agent", "agent_loop_config_path": None,
              "custom_async_server": {"_target_": "verl.workers.config.CustomAsyncServerConfig", "path": None,
                                      "name": None}},
}


def test_verl_defaults_and_overrides():
    cfg = AgentLoopConfig.from_rollout_config(OmegaConf.create(VERL_ROLLOUT))
    assert cfg == AgentLoopConfig()
    section = OmegaConf.create(VERL_ROLLOUT)
    section.multi_turn.max_assistant_turns = 5
    section.multi_turn.tool_response_truncate_side = "left"
    section.agent.default_agent_loop = "tool_agent"
    cfg = AgentLoopConfig.from_rollout_config(section)
    assert (cfg.multi_turn.max_assistant_turns, cfg.multi_turn.tool_response_truncate_side,
            cfg.agent.default_agent_loop) == (5, "left", "tool_agent")


@pytest.mark.parametrize("path,value,error", [
    ("multi_turn.max_parallel_calls", 0, "max_parallel_calls must be an int >= 1"),
    ("multi_turn.tool_response_truncate_side", "both", "tool_response_truncate_side must be one of"),
    ("multi_turn.max_user_turns", -1, "max_user_turns must be null or an int >= 0"),
    ("multi_turn.use_inference_chat_template", True, "use_inference_chat_template=True is not supported"),
    ("multi_turn.max_turns", 3, r"unknown key\(s\) \['max_turns'\]"),
    ("agent.custom_async_server", {"path": "x.py", "name": "S"}, "custom_async_server=.* is not supported"),
    ("response_length", 0, "rollout.response_length must be an int >= 1"),
])
def test_bad_settings_are_refused(path, value, error):
    section = OmegaConf.create(VERL_ROLLOUT)
    OmegaConf.update(section, path, value)
    with pytest.raises(ValueError, match=error):
        AgentLoopConfig.from_rollout_config(section)


class CountingAgent(AgentLoopBase):
    """A custom loop built from the agent loop config file with a constructor argument."""

    def __init__(self, *args, repeat: int = 1, **kwargs):
        kwargs.pop("tools", None)
        super().__init__(*args, **kwargs)
        self.repeat = repeat

    async def run(self, sampling_params, **kwargs):
        prompt = self.tokenizer.encode("x", add_special_tokens=False)
        ids = []
        for _ in range(self.repeat):
            out = await self.server_manager.generate(prompt_ids=prompt + ids, sampling_params=sampling_params)
            ids += out.token_ids
        return AgentLoopOutput(prompt_ids=prompt, response_ids=ids, response_mask=[1] * len(ids), num_turns=1 + self.repeat)


def test_agent_loop_config_path(tmp_path, qwen3):
    path = tmp_path / "agents.yaml"
    path.write_text(textwrap.dedent("""\
        - name: counting_agent
          _target_: agent_loop.test_config.CountingAgent
          repeat: 3
        """))
    cfg = AgentLoopConfig(agent={"agent_loop_config_path": str(path), "default_agent_loop": "counting_agent"})
    worker = AgentLoopWorker(ScriptedLLM(qwen3, lambda text, ids: "ab<|im_end|>"), qwen3, cfg, tools=[])
    assert get_agent_loop_class("counting_agent")[1] == {"repeat": 3}
    out, = worker.run([{"raw_prompt": [{"role": "user", "content": "q"}]}], {})
    assert out.num_turns == 4 and qwen3.decode(out.response_ids) == "ab<|im_end|>" * 3
    path.write_text("- name: broken\n  _target_: verl.tools.base_tool.BaseTool\n")
    with pytest.raises(TypeError, match="is not an AgentLoopBase subclass"):
        AgentLoopWorker(ScriptedLLM(qwen3, None), qwen3, cfg, tools=[])
