/*
 * eqsearch's Elasticsearch plugin: what every one of its rescorer builders answers alike.
 */
package org.eqsearch.elasticsearch;

import java.io.IOException;

import org.elasticsearch.TransportVersion;
import org.elasticsearch.TransportVersions;
import org.elasticsearch.common.io.stream.StreamInput;
import org.elasticsearch.index.query.QueryRewriteContext;
import org.elasticsearch.search.rescore.RescorerBuilder;

/**
 * The part of Elasticsearch's {@code RescorerBuilder} contract the plugin's rescorers share: their requests travel
 * between nodes of any Elasticsearch 8 or later (the plugin is built for one exact version; the wire format is its
 * own), and none of them rewrites (they carry no query to rewrite).
 */
abstract class EqsearchRescorerBuilder<RB extends EqsearchRescorerBuilder<RB>> extends RescorerBuilder<RB> {
    EqsearchRescorerBuilder() {}

    EqsearchRescorerBuilder(StreamInput in) throws IOException {
        super(in);
    }

    @Override
    public final TransportVersion getMinimalSupportedVersion() {
        return TransportVersions.V_8_0_0;
    }

    @Override
    public final RescorerBuilder<RB> rewrite(QueryRewriteContext ctx) {
        return this;
    }
}
