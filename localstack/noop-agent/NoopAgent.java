/*
 * A Java agent that does nothing. LocalStack starts DynamoDB Local with
 * -javaagent:ddb-local-loader-0.1.jar (a patch it normally downloads from a
 * host this machine cannot reach, only to allow 20+ GSIs). deltaguard's tests
 * need no GSIs, so localstack/install.sh builds this stand-in.
 */
public final class NoopAgent {
    private NoopAgent() {}

    public static void premain(String args, java.lang.instrument.Instrumentation inst) {}
}
