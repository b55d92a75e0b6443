"""Every use of a pipecat private, and nothing else: the runner's one border with pipecat.

pipecat changes its underscore names without notice, so the runner touches
them only here, through thin subclasses that offer what the rest of the code
needs under public names. Each private below has a test that fails the day
pipecat changes under it (gone, renamed, or no longer doing what we rely on),
and ``tests/pipecat_internals/test_border.py`` fails if any other runtime
module touches one. Pinned pipecat 1.14 has no public seam for any of them:

``websocket_client.py``: pipe audio to pipecat-manager unpaced.
  ``WebsocketClientOutputTransport._write_audio_sleep`` (pipecat's real-time
  pacing; the media server paces playout itself): ``tests/manager/test_transport.py``
  ``test_bot_audio_reaches_pipecat_manager_far_faster_than_real_time``.
  ``._write_frame`` (send a frame now, outside the audio queue, for
  ``FLUSH_MEDIA``): ``test_no_audio_from_before_a_barge_in_leaves_after_the_flush``.
  ``WebsocketClientTransport._session``, ``._params`` (what its processors
  are built on) and ``._input``, ``._output`` (where its callbacks find them):
  ``test_caller_audio_reaches_the_pipeline_in_order_and_joined_without_a_task_per_frame``
  and the two above.
  ``BaseOutputTransport._media_senders`` and ``._params`` (the output's sender is
  a ``DirectMediaSender``, built in pipecat's ``set_transport_ready`` hook):
  ``tests/pipecat_internals/test_media_sender.py``.
  ``BaseInputTransport._params`` and ``._paused`` (the input hands caller audio
  on from the socket's task, in place of the audio queue and task pipecat makes
  in ``set_transport_ready``): that test, and
  ``tests/pipecat_internals/test_websocket_client.py`` (no caller audio after the end).
``media_sender.py``: ``MediaSender._next_frame`` and ``._internal_write_audio_frame``
  (take queued frames and write audio without a task per frame), and the
  ``._audio_queue``, ``._mixer``, ``._filter_audio``, ``._apply_volume``,
  ``._bot_stopped_speaking``, ``._transport`` and ``._params`` they use:
  ``tests/pipecat_internals/test_media_sender.py``, which fails if the output's
  sender takes or writes a frame in a task of its own (pipecat's does), changes
  what leaves it or in what order, stops ending the bot's speech or writing off a
  stuck peer, or stops letting an interruption in between two chunks.
``deepgram.py``: ``DeepgramSTTService._connection`` (whether a socket is up) and
  ``._do_reconnect`` (reconnect now, without pipecat's backoff):
  ``tests/providers/test_deepgram.py`` (``test_pipecats_deepgram_service_*``,
  ``test_pipecats_do_reconnect_*`` and the gapless tests). The name
  ``AsyncDeepgramClient`` in pipecat's module (the client each service builds,
  swapped for one on a shared HTTP client), and in the Deepgram SDK, its
  client's ``_client_wrapper`` and the listening socket's opener
  ``websockets_client_connect``: ``test_deepgram_services_share_one_http_client_*``
  and ``tests/test_tls.py``.
``websocket_service.py``: ``WebsocketService._websocket_connect`` (pipecat's voices
  open their sockets over the process's TLS context): ``tests/test_tls.py``.
``whisper.py``: ``WhisperSTTService._load``, ``._model`` and
  ``._unsupported_language`` (run on a model loaded once per process):
  ``tests/speech/test_speech_models.py``, ``test_shared_whisper_*``.
``segments.py``: ``SegmentedSTTService._handle_user_started_speaking``,
  ``._handle_user_stopped_speaking`` and ``._segment_task_handler`` (hold each
  stretch's transcript for the end-of-turn rule's verdict), and the
  ``._segment_queue``, ``._audio_buffer``, ``._audio_buffer_size_1s`` and
  ``._user_speaking`` they use: ``tests/pipecat_internals/test_segments.py`` and
  ``tests/providers/test_local_speech.py``
  ``test_a_sentence_whose_audio_stalls_midway_reaches_the_llm_whole``.
``piper.py``: ``PiperTTSService._voice`` (speak with a voice loaded once per
  process): ``tests/speech/test_speech_models.py``, ``test_shared_piper_*``.
``tts.py``: ``TTSService._stream_audio_frames_from_iterator`` (PCM to audio
  frames at the pipeline's rate, for espeak-ng): ``tests/providers/test_espeak.py``
  ``test_service_speaks_at_the_pipeline_rate_in_a_real_pipeline``.
``audio_contexts.py``: ``TTSService._audio_context_manager`` and
  ``AudioContextManager._contexts`` and ``._KEEPALIVE`` (a voice reads each
  item of a reply without a task of its own per item, which pipecat's
  ``asyncio.wait_for`` makes): ``tests/pipecat_internals/test_audio_contexts.py``.
``analyzers.py``: ``SileroVADAnalyzer._model``, ``._windows_since_reset``,
  ``._low_confidence_windows`` and ``LocalSmartTurnAnalyzerV3._session``
  (run on sessions loaded once per process): ``tests/speech/test_speech_models.py``,
  ``test_shared_vad_*``, ``test_vad_on_a_session_*`` and ``test_shared_smart_turn_*``;
  ``._log_data`` (keep callers' audio off disk):
  ``test_shared_smart_turn_writes_no_audio_to_disk``. ``VADAnalyzer._run_analyzer``
  (analyze on the caller's task, not a thread per call), ``._prev_volume``,
  ``._smoothing_factor``, ``._volume_tracker``, ``._get_smoothed_volume`` and
  ``SileroVADAnalyzer._maybe_reset_model`` (the energy gate before Silero):
  ``tests/speech/test_vad_gate.py``, which plays the same audio to pipecat's own
  analyzer and requires the same state after every frame.
``connecting.py``: ``_connect`` of pipecat's Deepgram, Cartesia and ElevenLabs
  services (set one up without connecting, connect it later):
  ``tests/pipecat_internals/test_connecting.py``.
``worker_observer.py``: ``PipelineWorker._observer`` and ``WorkerObserver._observers``
  (queue only the events some observer reads: no processing events, no caller
  audio): ``tests/pipecat_internals/test_worker_observer.py``.
``switcher.py``: ``ServiceSwitcherStrategyManual._set_active_if_available``
  (switch the LLM at once): ``tests/routing/test_router_switching.py``,
  ``test_llm_switches_before_set_active_member_returns`` and
  ``test_strategy_activate_refuses_a_failed_or_foreign_service``.
  ``ServiceSwitcher._make_pipeline_definitions``, ``ParallelPipeline``'s state
  (``_pipelines``, ``_seen_ids``, the pause around Start/End/Cancel) and each
  service's ``_prev``/``_next`` (the services linked to the switcher with no
  pipeline, source, filters or sink between, ``DirectSwitcher``):
  ``tests/routing/test_router_shortcut.py`` (fingerprints of the code it rests on,
  the routers beside stock switchers,
  ``test_a_routers_branches_are_its_services_with_nothing_between``) and
  ``tests/routing/test_router_memory.py``.

Not here: pipecat behaviour the runner relies on through public names
only. The voice router's wait at a handoff (``routing/tts.py``) queues a
marker into the previous voice with ``queue_frame`` and relies on a TTS
service letting it out only behind the audio it is still making; the
handoff tests in ``tests/call/test_handoff_line.py`` fail if that changes.
The routers' shortcut (``routing/router.py``) has its own fingerprint test.

The package imports pipecat and nothing of the runner's, so any layer may use
it; it imports none of its modules itself, so a vendor's (Deepgram, Whisper,
Piper, ONNX Runtime) is loaded only when a call needs it.
"""
