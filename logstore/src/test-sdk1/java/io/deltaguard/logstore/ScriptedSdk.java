package io.deltaguard.logstore;

/** The SDK v1 jar's adapter over a {@link FakeS3}. */
final class ScriptedSdk {
    private ScriptedSdk() {}

    static S3Calls calls(FakeS3 store) {
        return new SdkS3Calls(new ScriptedAmazonS3(store));
    }
}
