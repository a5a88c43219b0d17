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
 */
package org.apache.kafka.controller;

import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.requests.ApiError;

import static org.apache.kafka.controller.DriverProtocol.describe;
import static org.apache.kafka.controller.DriverReflection.unwrap;

final class DriverOracles {
    private DriverOracles() {
    }

    /** What the handler threw, judged: the error the request gets, and "exception" when it
     * is a fault (not an ApiException: a bug in the build or in the driver). */
    static void noFault(Throwable thrown, ObjectNode answer) {
        Throwable cause = unwrap(thrown);
        ApiError error = ApiError.fromThrowable(cause);
        answer.put("ok", false);
        answer.put("error", error.error().name() + ": " + error.messageWithFallback());
        answer.put("errorName", error.error().name());
        if (!(cause instanceof ApiException)) {
            answer.put("exception", describe(cause));  // not a refusal: a bug here or there
            cause.printStackTrace();
        }
    }
}
