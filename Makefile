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
# One plugin jar per AWS SDK generation (logstore/pom.xml profiles sdk2 and sdk1).
PLUGIN_JAR := logstore/python/jars/deltaguard-logstore-0.1.0.jar
PLUGIN_JAR_SDK1 := logstore/python/jars/deltaguard-logstore-sdk1-0.1.0.jar
JAVA_SOURCES := $(shell find logstore/src -name '*.java' 2>/dev/null) logstore/pom.xml

.PHONY: help setup venv jar jars testbed testbed-lines demo test test-java lint bench clean

help:
	@echo "make demo   set everything up, run the multi-driver demo on embedded S3 (LocalStack)"
	@echo "make test   set everything up, run every test (Python + JUnit)"
	@echo "make bench  set everything up, run the benchmarks (JSON + markdown in bench/results)"
	@echo "make lint   ruff"

$(UV):
	python3.11 -m venv $(DELTAGUARD_CACHE)/bootstrap
	$(DELTAGUARD_CACHE)/bootstrap/bin/pip install -q uv==$(UV_VERSION)

$(VENV)/.installed: pyproject.toml $(UV)
	$(UV) venv -q --allow-existing -p python3.11 $(VENV)
	VIRTUAL_ENV=$(abspath $(VENV)) $(UV) pip install -q -e '.[test,dev]'
	touch $@

venv: $(VENV)/.installed

# The plugin jar: built by Maven, carried by the Python package. `make test` runs its JUnit suite.
$(PLUGIN_JAR): $(JAVA_SOURCES)
	mvn -B -q -f logstore/pom.xml -P sdk2 -DskipTests package
	mkdir -p $(dir $@)
	cp logstore/target/sdk2/$(notdir $@) $@

$(PLUGIN_JAR_SDK1): $(JAVA_SOURCES)
	mvn -B -q -f logstore/pom.xml -P sdk1 -DskipTests package
	mkdir -p $(dir $@)
	cp logstore/target/sdk1/$(notdir $@) $@

jar: $(PLUGIN_JAR) $(PLUGIN_JAR_SDK1)

jars: venv
	$(PY) -m deltaguard.spark_conf.jvm_deps > /dev/null

testbed:
	bash localstack/install.sh

# One cached virtualenv per older Spark line (3.5, 3.5 on Hadoop 3.4, 4.0) for the per-line
# tests and benchmarks.
testbed-lines: venv jar
	$(PY) -m deltaguard.testbed.spark_line_venvs 3.5 3.5-hadoop3.4 4.0 > /dev/null

setup: venv jar jars testbed testbed-lines

demo: setup
	$(PY) -m deltaguard.testbed.demo

# The JUnit suite once per SDK generation: the shared protocol through each jar's adapter.
test-java:
	for sdk in sdk2 sdk1; do \
	  echo "JUnit, $$sdk jar:"; \
	  mvn -B -f logstore/pom.xml -P $$sdk test | grep -E 'Tests run|FAIL|ERROR|BUILD'; \
	  [ $${PIPESTATUS[0]} -eq 0 ] || exit 1; \
	done

test: setup test-java
	@bash .ci/timed-tests

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

bench: setup
	$(PY) -m bench

clean:
	rm -rf $(VENV) logstore/target logstore/python/jars build *.egg-info
