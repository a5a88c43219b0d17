/*
 * The checks the driver makes itself, needing no model (issue 44 item 1). Today one: no
 * fault. The others of that item (snapshot equivalence, index consistency, image agreement)
 * belong here, each adding what it found to the answer.
 *
 * No fault: an event's handler may throw. An ApiException is a refusal, the answer the
 * request gets (ApiError.fromThrowable gives its error code). Anything else is what
 * QuorumController.handleEventException treats as a fault: the active controller renounces
 * leadership and the event's records are reverted (here: none was replayed, the managers
 * only return records). The answer then carries "exception", which the harness makes a
 * finding of its own class (harness/differential/compare.py: fault:<class>:<op>:<profile>).
 *
 * A fault also ends the controller's in-memory broker state that no record carries:
 * QuorumController.renounce calls ClusterControlManager.deactivate (the heartbeat manager
 * dropped), and the next active controller's ClusterControlManager.activate registers every
 * broker in a new one with its registration's fenced state. A handler can touch the heartbeat
 * manager before it throws (ReplicationControlManager.processBrokerHeartbeat:
 * heartbeatManager.touch(brokerId, states.next().fenced(), ..) comes before
 * handleDirectoriesOffline, which throws for a stale directory index): the driver, which goes
 * on with the same managers, then puts each broker's fenced state back as activate would
 * (renounced). Sessions are kept, as DriverSnapshot.copySessions keeps them: a new session
 * for every broker is failover's own behaviour, not the state being compared.
 */
package org.apache.kafka.controller;

import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.requests.ApiError;
import org.apache.kafka.metadata.BrokerRegistration;

import static org.apache.kafka.controller.DriverProtocol.describe;
import static org.apache.kafka.controller.DriverReflection.unwrap;

final class DriverOracles {
    private DriverOracles() {
    }

    /** What the handler threw, judged: the error the request gets, and "exception" when it
     * is a fault (not an ApiException: a bug in the build or in the driver). */
    static void noFault(Throwable thrown, ObjectNode answer, DriverState st) {
        Throwable cause = unwrap(thrown);
        ApiError error = ApiError.fromThrowable(cause);
        answer.put("ok", false);
        answer.put("error", error.error().name() + ": " + error.messageWithFallback());
        answer.put("errorName", error.error().name());
        if (!(cause instanceof ApiException)) {
            answer.put("exception", describe(cause));  // not a refusal: a bug here or there
            cause.printStackTrace();
            renounced(st);
        }
    }

    /** After a fault: every registered broker's fenced state in the heartbeat manager as
     * ClusterControlManager.activate sets it (BrokerHeartbeatManager.register(id, fenced)),
     * where it differs from the registration's; sessions untouched. */
    static void renounced(DriverState st) {
        BrokerHeartbeatManager hbm = st.clusterControl.heartbeatManager();
        for (BrokerRegistration r : st.clusterControl.brokerRegistrations().values()) {
            for (BrokerHeartbeatManager.BrokerHeartbeatState s : hbm.brokers()) {
                if (s.id() == r.id() && s.fenced() != r.fenced()) {
                    hbm.register(r.id(), r.fenced());
                    break;
                }
            }
        }
    }
}
