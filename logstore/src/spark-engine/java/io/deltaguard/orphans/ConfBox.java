package io.deltaguard.orphans;

import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.Serializable;
import org.apache.hadoop.conf.Configuration;

/** A Hadoop {@link Configuration} that Spark can ship to executors (it is Writable, not
 * Serializable): every entry of the driver's configuration, none loaded from the executor's
 * defaults. */
final class ConfBox implements Serializable {
    private static final long serialVersionUID = 1L;
    private transient Configuration conf;

    ConfBox(Configuration conf) {
        this.conf = conf;
    }

    Configuration get() {
        return conf;
    }

    private void writeObject(ObjectOutputStream out) throws IOException {
        out.defaultWriteObject();
        conf.write(out);
    }

    private void readObject(ObjectInputStream in) throws IOException, ClassNotFoundException {
        in.defaultReadObject();
        conf = new Configuration(false);
        conf.readFields(in);
    }
}
