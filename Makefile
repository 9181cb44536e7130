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
MVN := mvn -B -Drevision=$(VERSION)
PLUGIN_JAR := logstore/python/jars/deltaguard-logstore-$(VERSION).jar
JAVA_SOURCES := $(shell find logstore/src -name '*.java' 2>/dev/null) logstore/pom.xml

.PHONY: help setup venv jar jars localstack demo test test-java lint bench clean

help:
	@echo "make demo   set everything up, run the multi-driver demo on embedded S3 (LocalStack)"
	@echo "make test   set everything up, run every test (Python + JUnit)"
	@echo "make bench  set everything up, run the benchmarks (JSON + markdown in bench/results)"
	@echo "make lint   ruff"

$(UV):
	python3.11 -m venv $(DELTAGUARD_CACHE)/bootstrap
	$(DELTAGUARD_CACHE)/bootstrap/bin/pip install -q uv==$(UV_VERSION)

# A strict editable install: build/__editable__.*/deltaguard/ is a tree of links to the sources,
# laid out as the import paths, so static tools (mypy, IDEs) follow it. A new module needs a
# re-link: the install depends on the list of package files.
PACKAGE_FILES := $(shell find logstore/python spark_conf tools localstack -name '*.py' -o -name py.typed 2>/dev/null | sort)
$(VENV)/.installed: pyproject.toml VERSION $(PACKAGE_FILES) $(UV)
	$(UV) venv -q --allow-existing -p python3.11 $(VENV)
	VIRTUAL_ENV=$(abspath $(VENV)) $(UV) pip install -q -e '.[spark,test,dev]' --config-settings editable_mode=strict
	touch $@

venv: $(VENV)/.installed

# The plugin jar: built by Maven, carried by the Python package. `make test` runs its JUnit suite.
$(PLUGIN_JAR): $(JAVA_SOURCES)
	$(MVN) -q -f logstore/pom.xml -DskipTests clean package
	mkdir -p $(dir $@)
	cp logstore/target/deltaguard-logstore-$(VERSION).jar $@

jar: $(PLUGIN_JAR)

jars: venv
	$(PY) -m deltaguard.spark_conf.jvm_deps > /dev/null

localstack:
	bash localstack/install.sh

setup: venv jar jars localstack

demo: setup
	$(PY) -m deltaguard.localstack.demo

test-java:
	$(MVN) -f logstore/pom.xml test | grep -E 'Tests run|FAIL|ERROR|BUILD'; exit $${PIPESTATUS[0]}

test: setup test-java
	@bash .ci/timed-tests

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# The JVM benchmark tool (CommitLatency) is test code of logstore/: compiled here, never jarred.
bench-classes:
	$(MVN) -q -f logstore/pom.xml test-compile

bench: setup bench-classes
	$(PY) -m bench

clean:
	rm -rf $(VENV) logstore/target logstore/python/jars build *.egg-info
