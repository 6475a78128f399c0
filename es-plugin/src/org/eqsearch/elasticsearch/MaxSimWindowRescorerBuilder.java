/*
 * eqsearch's Elasticsearch plugin: the hits of a ranked list whose MaxSim score the search extension brings.
 */
package org.eqsearch.elasticsearch;

import java.io.IOException;
import java.util.HashSet;
import java.util.Set;

import org.apache.lucene.search.Explanation;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TopDocs;
import org.elasticsearch.common.io.stream.StreamInput;
import org.elasticsearch.common.io.stream.StreamOutput;
import org.elasticsearch.index.query.SearchExecutionContext;
import org.elasticsearch.search.rescore.RescoreContext;
import org.elasticsearch.search.rescore.Rescorer;
import org.elasticsearch.xcontent.ObjectParser;
import org.elasticsearch.xcontent.ToXContent;
import org.elasticsearch.xcontent.XContentBuilder;
import org.elasticsearch.xcontent.XContentParser;

/**
 * {@code "rescore": {"window_size": K, "eqsearch_maxsim_window": {}}}, last in a list's rescores: the
 * shard's top K hits, as ranked after every rescore before it, are the only ones the {@code eqsearch_maxsim} search
 * extension scores ({@link MaxSimFetchSubPhase}); the hits keep their scores and order. The window never
 * cuts a tie: the hits below the K-th with its very score are in it too (copies of one formula tie, and the engine's
 * fusion may order them otherwise than the shard's document order, which would leave a fused candidate unscored).
 * The fetch phase knows which hits these are from the rescored documents Elasticsearch records per rescore and hands
 * from the query phase to the fetch phase, on one shard or many. Without it the extension scores every returned hit.
 * The body takes no fields.
 */
public final class MaxSimWindowRescorerBuilder extends EqsearchRescorerBuilder<MaxSimWindowRescorerBuilder> {
    public static final String NAME = "eqsearch_maxsim_window";

    private static final ObjectParser<MaxSimWindowRescorerBuilder, Void> PARSER = new ObjectParser<>(
        NAME,
        MaxSimWindowRescorerBuilder::new
    );

    MaxSimWindowRescorerBuilder() {}

    public MaxSimWindowRescorerBuilder(StreamInput in) throws IOException {
        super(in);
    }

    public static MaxSimWindowRescorerBuilder fromXContent(XContentParser parser) throws IOException {
        return PARSER.parse(parser, null);
    }

    @Override
    protected void doWriteTo(StreamOutput out) {}

    @Override
    public String getWriteableName() {
        return NAME;
    }

    @Override
    protected void doXContent(XContentBuilder builder, ToXContent.Params params) throws IOException {
        builder.startObject(NAME).endObject();
    }

    @Override
    protected RescoreContext innerBuildContext(int windowSize, SearchExecutionContext context) {
        return new RescoreContext(windowSize, Marker.INSTANCE);
    }

    /** Whether {@code context} is this rescore's: the fetch phase scores only the hits it marked. */
    static boolean marks(RescoreContext context) {
        return context.rescorer() == Marker.INSTANCE;
    }

    /** Records the window's documents and changes nothing else. */
    static final class Marker implements Rescorer {
        static final Marker INSTANCE = new Marker();

        @Override
        public TopDocs rescore(TopDocs topDocs, IndexSearcher searcher, RescoreContext context) {
            Set<Integer> window = new HashSet<>();
            if (topDocs != null) {
                ScoreDoc[] hits = topDocs.scoreDocs;
                int end = Math.min(context.getWindowSize(), hits.length);
                while (end > 0 && end < hits.length && hits[end].score == hits[end - 1].score) {
                    end++; // a window never cuts a tie
                }
                for (int i = 0; i < end; i++) {
                    window.add(hits[i].doc);
                }
            }
            context.setRescoredDocs(window);
            return topDocs;
        }

        @Override
        public Explanation explain(int topLevelDocId, IndexSearcher searcher, RescoreContext context, Explanation source) {
            return source;
        }
    }

    @Override
    public boolean equals(Object obj) {
        return super.equals(obj);
    }

    @Override
    public int hashCode() {
        return super.hashCode();
    }
}
