// npm run bench:workspace:upload — workspace transfers through the API next to
// `docker cp` of the same archive, in one run (issue 20, bench/RESULTS.md).
//   npm run bench:workspace:upload [-- --runs 5 --files 10000 --big-mib 128 --update-results]
// The image is THINKFLOW_SANDBOX_IMAGE (as the service reads it), else thinkflow/sandbox:latest.
import { parseArgs } from 'node:util';
import { updateResults } from '../sandbox/results.ts';
import { benchUpload } from './upload.ts';

const { values } = parseArgs({ options: {
  runs: { type: 'string', default: '5' },
  files: { type: 'string', default: '10000' },
  'big-mib': { type: 'string', default: '128' },
  'update-results': { type: 'boolean', default: false },
} });

const out = await benchUpload({
  runs: Number(values.runs), files: Number(values.files), bigMiB: Number(values['big-mib']),
  image: process.env.THINKFLOW_SANDBOX_IMAGE ?? 'thinkflow/sandbox:latest',
});
console.log(out);
if (values['update-results']) await updateResults('npm run bench:workspace:upload', out, 'Workspace upload');
