/*
 * eqsearch's Elasticsearch plugin: each returned hit's MaxSim score, computed in the fetch phase.
 */
package org.eqsearch.elasticsearch;

import java.io.IOException;
import java.util.List;
import java.util.Set;

import org.apache.lucene.index.BinaryDocValues;
import org.apache.lucene.index.DocValues;
import org.apache.lucene.index.LeafReaderContext;
import org.elasticsearch.search.rescore.RescoreContext;
import org.elasticsearch.common.document.DocumentField;
import org.elasticsearch.search.fetch.FetchContext;
import org.elasticsearch.search.fetch.FetchSubPhase;
import org.elasticsearch.search.fetch.FetchSubPhaseProcessor;
import org.elasticsearch.search.fetch.StoredFieldsSpec;

/**
 * Where a search carries the {@code eqsearch_maxsim} extension ({@link MaxSimFetchBuilder}), puts each returned hit's
 * MaxSim score against the query's node vectors into the hit's {@code fields} ({@link MaxSimFetchBuilder#FIELD}, one
 * float), read from the same doc values and computed by the same code as the rescorer's ({@link MaxSimRequest.Scorer}),
 * so the two give the same score to the last bit. A hit without node vectors (or on a shard that does not map the
 * field) gets no field. Only the returned hits are scored: the ranking's own request brings them, with no second one;
 * where the search's rescores end with {@link MaxSimWindowRescorerBuilder}'s window, only the hits in it.
 */
final class MaxSimFetchSubPhase implements FetchSubPhase {
    @Override
    public FetchSubPhaseProcessor getProcessor(FetchContext context) {
        if (context.getSearchExt(MaxSimFetchBuilder.NAME) instanceof MaxSimFetchBuilder ext) {
            Set<Integer> window = null;
            for (RescoreContext rescore : context.rescore()) {
                if (MaxSimWindowRescorerBuilder.marks(rescore)) {
                    window = rescore.getRescoredDocs() == null ? Set.of() : rescore.getRescoredDocs();
                }
            }
            return new Processor(ext.request.scorer(context.getSearchExecutionContext(), "ext." + MaxSimFetchBuilder.NAME), window);
        }
        return null;
    }

    private static final class Processor implements FetchSubPhaseProcessor {
        private final MaxSimRequest.Scorer scorer;
        private final Set<Integer> window; // the marked top-level doc ids; null: every hit
        private BinaryDocValues values;
        private int docBase;

        Processor(MaxSimRequest.Scorer scorer, Set<Integer> window) {
            this.scorer = scorer;
            this.window = window;
        }

        @Override
        public void setNextReader(LeafReaderContext readerContext) throws IOException {
            values = scorer.field == null ? null : DocValues.getBinary(readerContext.reader(), scorer.field);
            docBase = readerContext.docBase;
        }

        @Override
        public void process(HitContext hitContext) throws IOException {
            if (window != null && window.contains(docBase + hitContext.docId()) == false) {
                return;
            }
            float score = scorer.score(values, hitContext.docId());
            if (score != MaxSimRequest.MISSING) {
                hitContext.hit().setDocumentField(new DocumentField(MaxSimFetchBuilder.FIELD, List.of(score)));
            }
        }

        @Override
        public StoredFieldsSpec storedFieldsSpec() {
            return StoredFieldsSpec.NO_REQUIREMENTS;
        }
    }
}
