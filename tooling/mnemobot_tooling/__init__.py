"""mnemobot's development tooling, installed apart from the bot (`pip install -e ./tooling`).

- `bench/`: `mnemobot bench ...`, what the bot costs (throughput, latency, memory speed,
  crashes, consolidation, memory tokens of live chats);
- `evals/`: `mnemobot eval ...`, how well memory finds what was said (LoCoMo, changed facts);
- `fakes/`: a fake Telegram Bot API and a fake OpenAI-compatible server on 127.0.0.1, the
  test kit the tests and the benches share; `redis_server`: a real Redis process for them;
- `cli`: the command lines `mnemobot` hands `bench` and `eval` to.
"""
