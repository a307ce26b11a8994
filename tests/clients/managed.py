"""The lifecycle both test servers share (`StrataBroker`, `EtcdServer`): a child process whose
output goes to files, stopped cleanly (SIGTERM) or crashed (SIGKILL)."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path


class ManagedProcess:
    """A subclass sets `process`, `output_files`, and the class attributes below."""

    #: How long a clean stop may take before the process is killed.
    STOP_TIMEOUT_S = 30.0
    #: The exception a stop that had to kill raises.
    error: type[Exception] = RuntimeError

    process: subprocess.Popen | None
    output_files: list[Path]

    def describe(self) -> str:
        """What the process is, for error messages."""
        raise NotImplementedError

    def stop(self) -> int:
        """Clean shutdown (SIGTERM); returns the exit code. Kills the process if it hangs."""
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else 0
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=self.STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise self.error(f"{self.describe()} ignored SIGTERM for {self.STOP_TIMEOUT_S}s:\n{self.output_tail()}")

    def kill(self) -> None:
        """Crash the process: SIGKILL, no chance to flush or clean up."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def output_tail(self, max_bytes: int = 20_000) -> str:
        parts = []
        for path in self.output_files:
            try:
                data = path.read_bytes()
            except OSError:
                continue
            if len(data) > max_bytes:
                data = b"...\n" + data[-max_bytes:]
            parts.append(f"--- {path.name} ---\n{data.decode(errors='replace')}")
        return "\n".join(parts)
