"""Runs openai_client_test.mjs (the official `openai` npm client) against a fresh server.
argv: SERVER_BINARY SHARED_DIR NPM_DIR (holding node_modules/openai)."""
import os
import shutil
import subprocess
import sys

import harness


def main():
    binary, shared, npm_dir = sys.argv[1:4]
    model = harness.model_path(shared)
    if not shutil.which("node"):
        harness.skip("node is not installed")
    if not os.path.isdir(os.path.join(npm_dir, "node_modules", "openai")):
        harness.skip("the openai npm package is not installed in " + npm_dir + " (server_npm_setup failed?)")
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "openai_client_test.mjs")
    # node resolves `openai` from the script's folder upwards: run a copy placed next to node_modules.
    local = os.path.join(npm_dir, "openai_client_test.mjs")
    shutil.copyfile(script, local)
    with harness.Server(binary, model, "--api-key", "test-key-1,test-key-2", "-a", "tiny") as srv:
        env = dict(os.environ, BASE_URL=srv.url, API_KEY="test-key-2", MODEL_ID="tiny")
        r = subprocess.run(["node", local], env=env, timeout=300)
        if r.returncode != 0:
            print(srv.output()[-4000:])
        return r.returncode


if __name__ == "__main__":
    sys.exit(main())
