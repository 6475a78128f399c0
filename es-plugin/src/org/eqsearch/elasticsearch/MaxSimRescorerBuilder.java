/*
 * eqsearch's Elasticsearch plugin: the request side of the MaxSim rescorer.
 */
package org.eqsearch.elasticsearch;

import java.io.IOException;
import java.util.Objects;

import org.elasticsearch.common.io.stream.StreamInput;
import org.elasticsearch.common.io.stream.StreamOutput;
import org.elasticsearch.index.query.SearchExecutionContext;
import org.elasticsearch.search.rescore.RescoreContext;
import org.elasticsearch.xcontent.ToXContent;
import org.elasticsearch.xcontent.XContentBuilder;
import org.elasticsearch.xcontent.XContentParser;

/**
 * {@code "rescore": {"window_size": N, "eqsearch_maxsim": {"query_vectors": BASE64, "dims": D, "symmetric": false}}}:
 * the query formula's node vectors ({@link MaxSimRequest}, which reads and checks them), scored against each
 * candidate's stored node vectors ({@link NodeVectors}); the candidate's score becomes its MaxSim score.
 */
public final class MaxSimRescorerBuilder extends EqsearchRescorerBuilder<MaxSimRescorerBuilder> {
    public static final String NAME = "eqsearch_maxsim";

    private final MaxSimRequest request;

    MaxSimRescorerBuilder(MaxSimRequest request) {
        this.request = request;
    }

    public MaxSimRescorerBuilder(StreamInput in) throws IOException {
        super(in);
        request = new MaxSimRequest(in);
    }

    public static MaxSimRescorerBuilder fromXContent(XContentParser parser) throws IOException {
        return new MaxSimRescorerBuilder(MaxSimRequest.parse(parser, NAME));
    }

    @Override
    protected void doWriteTo(StreamOutput out) throws IOException {
        request.writeTo(out);
    }

    @Override
    public String getWriteableName() {
        return NAME;
    }

    @Override
    protected void doXContent(XContentBuilder builder, ToXContent.Params params) throws IOException {
        builder.startObject(NAME);
        request.toXContentFields(builder);
        builder.endObject();
    }

    @Override
    protected RescoreContext innerBuildContext(int windowSize, SearchExecutionContext context) throws IOException {
        return new MaxSimRescorer.Context(windowSize, request.scorer(context, NAME));
    }

    @Override
    public boolean equals(Object obj) {
        if (super.equals(obj) == false) {
            return false;
        }
        return request.equals(((MaxSimRescorerBuilder) obj).request);
    }

    @Override
    public int hashCode() {
        return Objects.hash(super.hashCode(), request);
    }
}
