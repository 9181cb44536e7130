# deltaguard: everything a fresh machine needs is installed by these targets,
# into caches that later runs reuse:
#   ~/.cache/deltaguard (DELTAGUARD_CACHE): uv, LocalStack venv, DynamoDB Local, Spark jars
#   ~/.m2: Maven's cache;  .venv: the project virtualenv (uv-managed, cache-backed)
SHELL := /bin/bash
.DEFAULT_GOAL := help

export DELTAGUARD_CACHE ?= $(HOME)/.cache/deltaguard
UV_VERSION := 0.13.9
UV := $(DELTAGUARD_CACHE)/bootstrap/bin/uv
export UV
VENV := .venv
PY := $(VENV)/bin/python
# The package version: one source (VERSION), read by pyproject, jars.py and Maven (-Drevision).
VERSION := $(shell cat VERSION)
# Off a terminal (make wheel > build.log, CI) no tool writes colour escapes: Maven's -B turns
# its colours off, but its jansi still writes resets (ESC[0m) unless jansi.noreset is set; uv
# gets --color never. Expanded by the recipe's shell, which sees make's stdout and stderr.
NO_TTY = ! { [ -t 1 ] && [ -t 2 ]; }
MVN_NO_COLOUR = $$($(NO_TTY) && echo -Djansi.noreset=true)
UV_NO_COLOUR = $$($(NO_TTY) && echo --color never)
MVN := MAVEN_OPTS="$${MAVEN_OPTS} $(MVN_NO_COLOUR)" mvn -B -Drevision=$(VERSION)
# Building the jars is a short JVM run: C1 only (no C2 warm-up) halves it (measured 21.7 -> 12.1 s
# a jar on a loaded 2-core machine). Only for the jar builds: JUnit forks its own JVMs.
MVN_BUILD := MAVEN_OPTS="$${MAVEN_OPTS:--XX:TieredStopAtLevel=1} $(MVN_NO_COLOUR)" mvn -B -Drevision=$(VERSION)
# One plugin jar per AWS SDK generation (logstore/pom.xml profiles sdk2 and sdk1).
PLUGIN_JAR := logstore/python/jars/deltaguard-logstore-$(VERSION).jar
PLUGIN_JAR_SDK1 := logstore/python/jars/deltaguard-logstore-sdk1-$(VERSION).jar
JAVA_SOURCES := $(shell find logstore/src -name '*.java' 2>/dev/null) logstore/pom.xml

.PHONY: help setup venv jar jars localstack spark-lines demo test test-fast test-java lint typecheck wheel bench bench-classes docs soak clean

help:  ## list every target
	@awk 'BEGIN {FS = ":.*## "} /^[a-z][a-z-]*:.*## / {printf "make %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# What a target needs from the machine: a missing tool stops make with one line naming it, only
# when that target really has to run (the recipe's first line expands it).
need = $(if $(shell command -v $(1) 2>/dev/null),,$(error $(1) not found on PATH: $(2) (docs/reference/requirements.md)))

$(UV):
	$(call need,python3.11,the uv bootstrap needs Python 3.11)
	python3.11 -m venv $(DELTAGUARD_CACHE)/bootstrap
	$(DELTAGUARD_CACHE)/bootstrap/bin/pip install -q uv==$(UV_VERSION)

# A strict editable install: build/__editable__.*/deltaguard/ is a tree of links to the sources,
# laid out as the import paths, so static tools (mypy, IDEs) follow it. A new module needs a
# re-link: the install depends on the list of package files.
PACKAGE_FILES := $(shell find logstore/python spark_conf tools localstack -name '*.py' -o -name py.typed 2>/dev/null | sort)
# It links package data too, as it finds it when it is made: the plugin jars are built first
# (and a rebuilt jar re-links), or the installed package would carry none.
# The test bed (localstack/) is a second, development-only distribution installed editable
# next to it (its link tree: localstack/build/__editable__.*); the wheel carries the product only.
$(VENV)/.installed: pyproject.toml localstack/pyproject.toml VERSION $(PACKAGE_FILES) $(PLUGIN_JAR) $(PLUGIN_JAR_SDK1) $(UV)
	$(UV) venv -q --allow-existing -p python3.11 $(VENV)
	VIRTUAL_ENV=$(abspath $(VENV)) $(UV) pip install -q -e '.[spark,test,dev]' -e ./localstack --config-settings editable_mode=strict
	touch $@

venv: $(VENV)/.installed  ## the project virtualenv (.venv, strict editable install with the spark, test and dev extras, and the test bed)

# The plugin jar: built by Maven, carried by the Python package. `make test` runs its JUnit suite.
$(PLUGIN_JAR): $(JAVA_SOURCES)
	$(call need,java,building the plugin jars needs Java 17)$(call need,mvn,building the plugin jars needs Maven)
	$(MVN_BUILD) -q -f logstore/pom.xml -P sdk2 -DskipTests clean package
	mkdir -p $(dir $@)
	cp logstore/target/sdk2/$(notdir $@) $@

$(PLUGIN_JAR_SDK1): $(JAVA_SOURCES)
	$(call need,java,building the plugin jars needs Java 17)$(call need,mvn,building the plugin jars needs Maven)
	$(MVN_BUILD) -q -f logstore/pom.xml -P sdk1 -DskipTests clean package
	mkdir -p $(dir $@)
	cp logstore/target/sdk1/$(notdir $@) $@

jar: $(PLUGIN_JAR) $(PLUGIN_JAR_SDK1)  ## build the plugin jars (SDK v2 and SDK v1) into the Python package

jars: venv  ## resolve Spark's Delta/S3 jars into the cache
	$(PY) -m deltaguard.spark_conf.jvm_deps > /dev/null

localstack: ## install the test bed: LocalStack (own venv), DynamoDB Local, versitygw, MinIO
	bash localstack/install.sh
	bash localstack/install_go_s3_server.sh versitygw
	bash localstack/install_go_s3_server.sh minio

# One cached virtualenv per older Spark line (3.5, 3.5 on Hadoop 3.4, 4.0, 4.1) for the per-line
# tests and benchmarks, and each line's class data sharing archive for the test-bed drivers
# (docs/reference/testbed.md; cached, so only the first run pays about 35 s a line).
spark-lines: venv jar  ## install the cached virtualenvs of the older Spark lines (per-line tests) and the drivers' class archives
	$(PY) -m deltaguard.localstack.class_archive ensure > /dev/null
	for python in $$($(PY) -m deltaguard.localstack.spark_line_venvs 3.5 3.5-hadoop3.4 4.0 4.1); do \
	  $$python -m deltaguard.localstack.class_archive ensure > /dev/null || exit 1; \
	done

setup: venv jar jars localstack spark-lines  ## everything above: venv, jars, localstack, spark-lines

demo: setup  ## set everything up, run the multi-driver demo on embedded S3 (LocalStack)
	$(PY) -m deltaguard.localstack.demo

# The JUnit suite once per SDK generation: the shared protocol through each jar's adapter.
# Then each jar's sources compile against the delta-storage of every line that runs it (the
# jars are built against the oldest; Delta 4.x's delta-storage is Java 11+ class files, so
# those builds use release 17, into target/<sdk>-delta<version>, apart from the shipped build).
test-java: venv ## the JUnit suite of logstore/, once per SDK generation; the build against each line's delta-storage
	for sdk in sdk2 sdk1; do \
	  echo "JUnit, $$sdk jar:"; \
	  $(MVN) -f logstore/pom.xml -P $$sdk test | grep -E 'Tests run|FAIL|ERROR|BUILD'; \
	  [ $${PIPESTATUS[0]} -eq 0 ] || exit 1; \
	done
	set -o pipefail; $(PY) -m deltaguard.spark_conf.spark_lines storage-builds | while read sdk delta; do \
	  echo "compile, $$sdk jar against delta-storage $$delta"; \
	  $(MVN) -q -f logstore/pom.xml -P $$sdk -Ddelta.version=$$delta -Dmaven.compiler.release=17 \
	    -Dbuild.dir.name=$$sdk-delta$$delta compile || exit 1; \
	done

# Tests marked `long` (the long variants of races, soaks and property tests) run in `make soak`;
# `make test` runs their short variants.
test: setup test-java  ## set everything up, run every test but the long variants (JUnit, then pytest; prints the wall time)
	@bash .ci/timed-tests -m "not long" -n 2 --dist loadgroup --no-loadscope-reorder

# The quick loop: what needs no Spark JVM and takes under 10 s a test (the CLI, the Python
# LogStores, audit and orphans on synthetic tables, the test-bed servers): under 3 minutes.
test-fast: venv jar localstack  ## the quick loop: no Spark JVM, no slow (10 s+) test (under 3 minutes)
	@bash .ci/timed-tests -m "not spark and not long and not slow" -n 2 --dist loadgroup

lint: venv  ## ruff check and ruff format --check
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# mypy reads the package through the strict editable installs' link trees (laid out as imports):
# the product's and the test bed's. mypy does not join a namespace package across MYPYPATH
# entries, so the test bed is named on its own (-p deltaguard alone would skip it).
TYPECHECK_PATH := build/__editable__.deltaguard-$(VERSION)-py3-none-any:localstack/build/__editable__.deltaguard_testbed-0-py3-none-any
typecheck: venv  ## mypy (strict) on the deltaguard package and the test bed, with boto3 stubs
	MYPYPATH=$(TYPECHECK_PATH) $(VENV)/bin/mypy -p deltaguard -p deltaguard.localstack

# Needs only Python 3.11, Java 17 and Maven: it brings its own uv (the bootstrap) and jars.
wheel: jar $(UV)  ## build the wheel (the product: plugin jars inside, no test bed) into dist/
	$(UV) build $(UV_NO_COLOUR) --wheel -q -o dist .

# The soak (docs/reference/testbed.md): mixed writers, faults, kills and cleanup, then invariants; the last
# line is its summary. Longer: make soak SOAK_DURATION=3600; more options: SOAK_ARGS (see --help).
SOAK_DURATION ?= 900
soak: setup  ## set everything up, run the long test variants, the soak on LocalStack (15 min; SOAK_DURATION=seconds), then the long rolling migration
	@bash .ci/timed-tests -m long
	$(PY) -m deltaguard.localstack.soak --duration $(SOAK_DURATION) $(SOAK_ARGS)
	$(PY) -m deltaguard.localstack.migration --long --workdir $(DELTAGUARD_CACHE)/migration-run

# The JVM benchmark tool (CommitLatency) is test code of logstore/: compiled here, never jarred.
bench-classes: ## compile the JVM benchmark tool (test code of logstore/)
	$(MVN) -q -f logstore/pom.xml -P sdk2 test-compile

# Some sections only, keeping the others' latest results: make bench BENCH_ARGS="--only throughput,streaming".
bench: setup bench-classes  ## set everything up, run the benchmarks (JSON + markdown in bench/results)
	$(PY) -m bench $(BENCH_ARGS)
	$(PY) docs/generate.py

# The reference pages read off the code and docs/benchmarks.md from bench/results/latest.json;
# tests/test_docs_generated.py fails until they are regenerated and committed.
docs: venv  ## regenerate the generated docs pages (CLI, exit codes, presets, benchmarks)
	$(PY) docs/generate.py

clean: ## remove the venv, build outputs and the packaged jar
	rm -rf $(VENV) logstore/target logstore/python/jars build localstack/build dist *.egg-info localstack/*.egg-info
