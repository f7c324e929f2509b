"""Shared pieces of the CLI smoke tests (check_plan_cli.py, check_bench_cli.py): the arguments,
the reference model (exit 77, skip, when the reference data is absent) and failure bookkeeping."""
import os, sys


class CliCheck:
    def __init__(self, model_rel):
        self.cli = sys.argv[1]
        shared = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__), '../../../shared')
        self.model = os.path.join(shared, 'refdata', model_rel)
        if not os.path.exists(self.model):
            print('reference models not present; skipping')
            sys.exit(77)
        self.fails = []

    def check(self, cond, what):
        if not cond:
            self.fails.append(what)
            print('FAIL:', what)

    def finish(self, name):
        print('%s: %s' % (name, 'FAILED: %d' % len(self.fails) if self.fails else 'ok'))
        sys.exit(1 if self.fails else 0)
