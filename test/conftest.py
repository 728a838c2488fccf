# Copyright 2026 sim_clock maintainers
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""
Test isolation, the suite's tiers, and fixtures shared by the suite.

Every run talks DDS on loopback only, on DDS domains of its own (one per test that starts a
server), and writes logs and temporary files under a folder of its own.

The folders of test/ mirror the package (``test/<part>/test_<module>.py`` holds the tests of
``sim_clock/<part>/<module>.py``), with ``scenarios/`` for the product driven as a user drives
it and ``package/`` for the repository's files. A test's tier is not its folder: each test
module declares it, ``pytestmark = pytest.mark.fast`` (or ``dds``, ``process``), and a module
that declares none, or more than one, is refused at collection. The tier is checked, not
trusted:

- ``fast``: no child process and no DDS participant (the time core, the node's and the bag
  player's parts with our doubles, the client's formatting, the package's files);
- ``dds``: rclpy nodes in the pytest process, on DDS, and no child process;
- ``process``: servers, players, CLIs, builds and browsers in processes of their own.

``scripts/run_tests.sh --fast`` runs the fast tier, ``--tier T`` any one (``-m T`` selects
the same tests); without either the whole suite runs. A fast test that creates an rclpy
context, or a fast or dds test that starts a process, fails, naming what it did
(:class:`TierGuard`).
"""

import ast
import os
import shutil
import sys
import tempfile

from hypothesis import settings
import pytest

# The property tests check behaviour, never speed: hypothesis's default deadline (200 ms an
# example, wall time) fails an example that a loaded machine merely ran late, as a timed test
# would. Speed is measured in benchmarks/.
settings.register_profile('sim_clock', deadline=None)
settings.load_profile('sim_clock')

#: The run's own folder: its TMPDIR, ROS_HOME and ROS_LOG_DIR.
RUN_DIR = pytest.StashKey[str]()
#: Whether the run passed (or selected no test): its folder is then removed at the end.
PASSED = pytest.StashKey[bool]()

TEST_DIR = os.path.dirname(os.path.abspath(__file__))
#: The tiers, each with what its tests may not do; a test module names its tier in pytestmark.
FORBIDDEN = {'fast': {'process', 'participant'}, 'dds': {'process'}, 'process': set()}
#: The tier of a collected test, read from its module once (pytest_collection_modifyitems).
TIER = pytest.StashKey[str]()
#: The audit events (sys.addaudithook) of starting a process.
PROCESS_EVENTS = frozenset({'subprocess.Popen', 'os.fork', 'os.forkpty', 'os.posix_spawn',
                            'os.spawn', 'os.system', 'os.exec', 'pty.spawn'})


class TierViolation(RuntimeError):
    """A test did what its tier forbids: started a process, or created an rclpy context."""


class TierGuard:
    """
    Fails a test that does what its tier forbids, while it runs (set-up and teardown included).

    Processes are seen through Python's audit hooks (every way of starting one raises an audit
    event); rclpy contexts (each one a DDS participant) through ``rclpy.Context.init``, which
    the guard wraps and calls. The forbidden call raises :class:`TierViolation`, and the test
    fails at teardown even if it caught that error.
    """

    def __init__(self):
        self.forbidden = set()
        self.violations = []

    def install(self) -> None:
        """Install the audit hook and wrap ``rclpy.Context.init`` (once per pytest run)."""
        sys.addaudithook(self._audit)
        from rclpy.context import Context
        original = Context.init
        guard = self

        def init(context, *args, **kwargs):
            guard.check('participant', 'created an rclpy context (a DDS participant)')
            return original(context, *args, **kwargs)
        Context.init = init

    def check(self, kind: str, what: str) -> None:
        """Raise TierViolation (and remember it) if the running test's tier forbids ``kind``."""
        if kind in self.forbidden:
            self.violations.append(what)
            raise TierViolation(
                f'{what}: tests of this tier may not (test/conftest.py, FORBIDDEN)')

    def _audit(self, event: str, args) -> None:
        if event in PROCESS_EVENTS and self.forbidden:
            self.check('process', f'started a process ({event} {args[0] if args else ""})')


GUARD = TierGuard()


class NoTier(ValueError):
    """A test module that declares no tier, or more than one, or a test that changes its tier."""


def module_tier(module) -> str:
    """Return the tier ``module`` declares in its ``pytestmark``; raise NoTier if not one."""
    marks = getattr(module, 'pytestmark', [])
    tiers = [mark.name for mark in (marks if isinstance(marks, list) else [marks])
             if mark.name in FORBIDDEN]
    if len(tiers) != 1:
        raise NoTier(f'declares {"no tier" if not tiers else "the tiers " + ", ".join(tiers)}: '
                     f'give it one, after its imports: pytestmark = pytest.mark.fast (no process, '
                     f'no DDS participant), pytest.mark.dds (rclpy nodes in the test process) '
                     f'or pytest.mark.process (processes of its own) (test/conftest.py)')
    return tiers[0]


def declared_tier(path) -> str:
    """
    Return the tier a test file's source names in its module-level ``pytestmark`` (or None).

    Read without importing the file: --tier leaves out the other tiers' files before they are
    imported, and test/package/test_tiers.py checks every file with it. The tier a test runs
    under is read from its imported module (:func:`module_tier`).
    """
    with open(path) as source:
        tree = ast.parse(source.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(target, ast.Name) and target.id == 'pytestmark'
                for target in node.targets):
            tiers = {mark.attr for mark in ast.walk(node.value)
                     if isinstance(mark, ast.Attribute) and mark.attr in FORBIDDEN
                     and ast.unparse(mark.value) == 'pytest.mark'}
            return tiers.pop() if len(tiers) == 1 else None
    return None


def tier_of(item) -> str:
    """Return the tier of test ``item``: its module's, which no test may change."""
    tier = module_tier(getattr(item, 'module', None))
    own = {mark.name for mark in item.iter_markers() if mark.name in FORBIDDEN}
    if own != {tier}:
        raise NoTier(f'{item.name} is marked {", ".join(sorted(own - {tier}))} in a module of '
                     f"the {tier} tier: a test's tier is its module's (test/conftest.py)")
    return tier


def pytest_addoption(parser):
    """Add --tier (the tests of one tier only) and --soak (statistical claims in full)."""
    parser.addoption('--tier', choices=sorted(FORBIDDEN),
                     help='run only the tests of this tier (fast, dds, process: test/conftest.py)')
    parser.addoption('--soak', action='store_true',
                     help='run the statistical tests (marker soak) at their full counts, e.g. '
                          '20 runs instead of 2 (scripts/soak.sh; harness.soak)')


def pytest_ignore_collect(collection_path, config):
    """Under --tier, leave out the test files of another tier, without importing them."""
    tier = config.getoption('--tier')
    name = collection_path.name
    if tier is None or not name.startswith('test_') or collection_path.suffix != '.py':
        return None
    return True if declared_tier(collection_path) not in (None, tier) else None


def pytest_collection_modifyitems(config, items):
    """Read each test's tier from its module; refuse every module without one; apply --tier."""
    refused = {}
    for item in items:
        try:
            item.stash[TIER] = tier_of(item)
        except NoTier as error:
            refused.setdefault(os.path.relpath(str(item.path)), str(error))
    if refused:
        raise pytest.UsageError('\n'.join(f'{path} {why}' for path, why in refused.items()))
    tier = config.getoption('--tier')
    if tier is not None:
        config.hook.pytest_deselected(items=[item for item in items if item.stash[TIER] != tier])
        items[:] = [item for item in items if item.stash[TIER] == tier]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Guard the test's set-up, call and teardown by its tier."""
    GUARD.forbidden, GUARD.violations = FORBIDDEN[item.stash[TIER]], []
    try:
        yield
    finally:
        GUARD.forbidden = set()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Fail the test at its teardown if it did what its tier forbids, even if it caught it."""
    outcome = yield
    report = outcome.get_result()
    if call.when == 'teardown' and GUARD.violations and not report.failed:
        report.outcome = 'failed'
        report.longrepr = (f'{item.nodeid} is in the {item.stash[TIER]} tier, and it '
                           + '; '.join(GUARD.violations))


def pytest_configure(config):
    """Isolate the run before anything imports rclpy; install the tier guard."""
    run_dir = tempfile.mkdtemp(prefix='sim_clock-test-')
    config.stash[RUN_DIR] = run_dir
    os.environ['TMPDIR'] = run_dir
    tempfile.tempdir = run_dir
    os.environ['ROS_HOME'] = os.path.join(run_dir, 'ros_home')
    os.environ['ROS_LOG_DIR'] = os.path.join(run_dir, 'ros_log')
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    os.environ.pop('ROS_STATIC_PEERS', None)
    os.environ.setdefault('AMENT_PREFIX_PATH', sys.prefix)
    # A child that crashes (SIGSEGV, SIGABRT, ...) prints its threads' Python stacks on its
    # stderr, which the test that started it shows: where in our code the crash came.
    os.environ['PYTHONFAULTHANDLER'] = '1'
    # Read by harness.soak when the test modules are imported (and by pytest-xdist's workers).
    if config.getoption('--soak'):
        os.environ['SIM_CLOCK_SOAK'] = '1'
    # The run's own domain; each test that needs one takes the next (sim_clock's allocator,
    # which the sim_clock fixture's harnesses share). Imported once the run is isolated.
    from sim_clock.client.domains import DOMAINS
    os.environ['ROS_DOMAIN_ID'] = str(DOMAINS.take())
    GUARD.install()


def pytest_sessionfinish(session, exitstatus):
    """Note how the run ended, for :func:`pytest_unconfigure`."""
    session.config.stash[PASSED] = exitstatus in (pytest.ExitCode.OK,
                                                  pytest.ExitCode.NO_TESTS_COLLECTED)


def pytest_unconfigure(config):
    """
    Remove the run's folder (ROS_HOME, logs, tmp_path: hundreds of MB) once every test passed.

    A run that failed keeps it, and says where last, for the files its failures left. A
    worker of pytest-xdist made its folder inside the one of the run, which the main process
    removes.
    """
    if hasattr(config, 'workerinput') or RUN_DIR not in config.stash:
        return
    run_dir = config.stash[RUN_DIR]
    if config.stash.get(PASSED, False):
        shutil.rmtree(run_dir, ignore_errors=True)
    else:
        config.get_terminal_writer().line(f'the files of this run are kept in {run_dir}')


@pytest.fixture(autouse=True)
def no_child_left():
    """Kill the child processes a test started and did not stop (it failed on the way)."""
    yield
    from harness import kill_children
    kill_children()


@pytest.fixture
def domain_id() -> int:
    """Return a DDS domain id that no other test of this run uses at the same time."""
    from sim_clock.client.domains import DOMAINS
    return DOMAINS.take()


@pytest.fixture
def context(domain_id):
    """Give the test an rclpy context of its own on its domain (init / yield / shutdown)."""
    import rclpy
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain_id)
    yield context
    rclpy.try_shutdown(context=context)


@pytest.fixture
def start_server(domain_id, tmp_path):
    """
    Return a function that starts a clock server on this test's domain; stop all at the end.

    Every server must end with exit code 0 on SIGINT.
    """
    from harness import ServerProcess
    servers = []

    def start(params=None, **kwargs):
        server = ServerProcess(domain_id, str(tmp_path), params, **kwargs)
        servers.append(server)
        return server
    yield start
    for server in servers:
        code = server.stop()
        assert code == 0, f'server exit code {code}:\n{server.log()}'
        assert 'Traceback' not in server.log(), server.log()


@pytest.fixture
def client(domain_id):
    """Return a test client node on this test's domain."""
    from harness import TestClient
    test_client = TestClient(domain_id)
    yield test_client
    test_client.close()
