/*
 * eqsearch's Elasticsearch plugin: the search extension that asks for each returned hit's MaxSim score.
 */
package org.eqsearch.elasticsearch;

import java.io.IOException;

import org.elasticsearch.TransportVersion;
import org.elasticsearch.TransportVersions;
import org.elasticsearch.common.io.stream.StreamInput;
import org.elasticsearch.common.io.stream.StreamOutput;
import org.elasticsearch.search.SearchExtBuilder;
import org.elasticsearch.xcontent.ToXContent;
import org.elasticsearch.xcontent.XContentBuilder;
import org.elasticsearch.xcontent.XContentParser;

/**
 * {@code "ext": {"eqsearch_maxsim": {"query_vectors": BASE64, "dims": D, "symmetric": false, "field": "node_vectors"}}}
 * : the same request as the {@code eqsearch_maxsim} rescorer's ({@link MaxSimRequest}), but the search's
 * own scores and order stay as they are; the fetch phase ({@link MaxSimFetchSubPhase}) adds each returned hit's MaxSim
 * score to its {@code fields} under {@link #FIELD}, so that a ranked list brings the scores of its candidates with it
 * and no second request is needed.
 */
public final class MaxSimFetchBuilder extends SearchExtBuilder {
    public static final String NAME = "eqsearch_maxsim";
    /** The hit's field that holds its score (absent for a hit without stored node vectors). */
    public static final String FIELD = "eqsearch_maxsim";

    final MaxSimRequest request;

    MaxSimFetchBuilder(MaxSimRequest request) {
        this.request = request;
    }

    public MaxSimFetchBuilder(StreamInput in) throws IOException {
        request = new MaxSimRequest(in);
    }

    public static MaxSimFetchBuilder fromXContent(XContentParser parser) throws IOException {
        return new MaxSimFetchBuilder(MaxSimRequest.parse(parser, "ext." + NAME));
    }

    @Override
    public void writeTo(StreamOutput out) throws IOException {
        request.writeTo(out);
    }

    @Override
    public String getWriteableName() {
        return NAME;
    }

    @Override
    public TransportVersion getMinimalSupportedVersion() {
        return TransportVersions.V_8_0_0;
    }

    @Override
    public XContentBuilder toXContent(XContentBuilder builder, ToXContent.Params params) throws IOException {
        builder.startObject(NAME);
        request.toXContentFields(builder);
        return builder.endObject();
    }

    @Override
    public boolean equals(Object obj) {
        return obj instanceof MaxSimFetchBuilder other && request.equals(other.request);
    }

    @Override
    public int hashCode() {
        return request.hashCode();
    }
}
